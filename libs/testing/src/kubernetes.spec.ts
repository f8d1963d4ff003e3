/**
 * deploy/k8s, checked without a cluster: each kustomize overlay rendered by `kubectl kustomize`
 * (kustomize as kubectl ships it) matches its committed render in deploy/k8s/rendered, and every
 * rendered object is valid against its schema — the Kubernetes API's (kubernetes-models, generated
 * from the Kubernetes 1.33 OpenAPI document) and KEDA's ScaledObject CRD (@kubernetes-models/keda,
 * from KEDA 2.10.1's CRD), both compiled to validators with Ajv — and against the product's own
 * facts: probes on the ports and paths the apps serve, settings the configuration knows, one
 * image, autoscalers aimed at workloads that exist, the queue-depth gauge the gateway exports.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { parseAllDocuments } from 'yaml';
import { ConfigSchema } from '@switchboard/config';
import { QueueName } from '@switchboard/contracts';

const ROOT = path.resolve(__dirname, '../../..');
const K8S = path.join(ROOT, 'deploy/k8s');
const OVERLAYS = fs.readdirSync(path.join(K8S, 'overlays')).sort();
const APPS = ['gateway', 'harness-worker', 'triage-worker', 'hooks-worker'] as const;
const WORKERS = ['harness-worker', 'triage-worker', 'hooks-worker'] as const;
/** The queues each worker processes (its @QueueProcessor classes), that its ScaledObject must count. */
const SCALED_QUEUES: Record<(typeof WORKERS)[number], string[]> = {
  'harness-worker': [QueueName.Turns],
  'triage-worker': [QueueName.Triage, QueueName.OutboundWebhooks],
  'hooks-worker': [QueueName.PostTurn],
};
const GATEWAY_PORT = 3000;
const WORKER_PORT = 9464;

/** Each kind this deployment uses, by apiVersion/kind, with the model that validates it. */
const MODELS: Record<string, { validate(this: void, data: unknown): void }> = {
  'v1/Namespace': { validate: (d) => new Namespace(d as never).validate() },
  'v1/ConfigMap': { validate: (d) => new ConfigMap(d as never).validate() },
  // kustomize's secretGenerator folds long base64 values over lines; the API server decodes them
  // with Go's base64 decoder, which skips line breaks, where the schema's "byte" format does not.
  'v1/Secret': {
    validate: (d) => {
      const secret = d as { data?: Record<string, string> };
      const data = Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [k, v.replace(/[\r\n]/g, '')]),
      );
      new Secret({ ...secret, data }).validate();
    },
  },
  'v1/Service': { validate: (d) => new Service(d as never).validate() },
  'apps/v1/Deployment': { validate: (d) => new Deployment(d as never).validate() },
  'batch/v1/Job': { validate: (d) => new Job(d as never).validate() },
  'policy/v1/PodDisruptionBudget': { validate: (d) => new PodDisruptionBudget(d as never).validate() },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    validate: (d) => new HorizontalPodAutoscaler(d as never).validate(),
  },
  'keda.sh/v1alpha1/ScaledObject': { validate: (d) => new ScaledObject(d as never).validate() },
};

type Dict = Record<string, any>;
interface K8sObject extends Dict {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

const kubectl = (() => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const renderedFile = (overlay: string) => path.join(K8S, 'rendered', `${overlay}.yaml`);
const withoutHeader = (text: string) => text.replace(/^# Rendered from .*\n/, '');

function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text).map((doc) => {
    if (doc.errors.length > 0) throw doc.errors[0];
    return doc.toJS() as K8sObject;
  });
}

/** The schema's verdict: undefined when valid, else the validator's message. */
function schemaErrors(object: unknown): string | undefined {
  const { apiVersion, kind } = object as K8sObject;
  const model = MODELS[`${apiVersion}/${kind}`];
  if (!model) return `no schema for ${apiVersion}/${kind}`;
  try {
    model.validate(object);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

const find = (objects: K8sObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);

const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);

describe('deploy/k8s', () => {
  it('has a dev and a prod overlay on one base, each with its committed render', () => {
    expect(OVERLAYS).toEqual(['dev', 'prod']);
    for (const overlay of OVERLAYS) {
      expect(fs.readFileSync(path.join(K8S, 'overlays', overlay, 'kustomization.yaml'), 'utf8')).toMatch(
        /- \.\.\/\.\.\/base/,
      );
      expect(fs.existsSync(renderedFile(overlay))).toBe(true);
    }
  });

  // kubectl is on the machines the tests run on; where it is not, the committed renders are still
  // validated below, and this says why the comparison did not run.
  (kubectl ? it.each(OVERLAYS) : it.skip.each(OVERLAYS))(
    'renders overlay %s with kubectl kustomize exactly as committed (npm run k8s:render)',
    (overlay) => {
      const fresh = execFileSync('kubectl', ['kustomize', path.join(K8S, 'overlays', overlay)], {
        encoding: 'utf8',
      });
      expect(withoutHeader(fs.readFileSync(renderedFile(overlay), 'utf8'))).toBe(fresh);
    },
  );
});

describe.each(OVERLAYS)('overlay %s, rendered', (overlay) => {
  const objects = parseObjects(withoutHeader(fs.readFileSync(renderedFile(overlay), 'utf8')));
  const deployments = objects.filter((o) => o.kind === 'Deployment');
  const deployment = (app: string) => find(objects, 'Deployment', `switchboard-${app}`)!;
  const container = (app: string) => deployment(app).spec.template.spec.containers[0] as Dict;
  const envOf = (c: Dict): Record<string, string> =>
    Object.fromEntries(
      ((c.env ?? []) as { name: string; value?: string }[]).map((e) => [e.name, e.value ?? '']),
    );
  const podSpecs = objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'Job')
    .map((o) => ({ name: o.metadata.name, spec: o.spec.template.spec as Dict }));

  it('validates every object against its Kubernetes or KEDA schema', () => {
    expect(objects.length).toBeGreaterThanOrEqual(15);
    for (const object of objects) {
      expect({ object: `${object.kind}/${object.metadata.name}`, errors: schemaErrors(object) }).toEqual({
        object: `${object.kind}/${object.metadata.name}`,
        errors: undefined,
      });
    }
  });

  it('the schemas do reject a broken object (the validation is not a no-op)', () => {
    const gateway = structuredClone(deployment('gateway'));
    gateway.spec.replicas = 'two';
    expect(schemaErrors(gateway)).toMatch(/replicas must be integer/);
    const noContainers = structuredClone(deployment('gateway'));
    delete noContainers.spec.template.spec.containers;
    expect(schemaErrors(noContainers)).toMatch(/must have required property containers/);
    const scaled = structuredClone(find(objects, 'ScaledObject', 'switchboard-harness-worker')!);
    delete scaled.spec.triggers[0].type;
    expect(schemaErrors(scaled)).toMatch(/must have required property type/);
    const hpa = structuredClone(find(objects, 'HorizontalPodAutoscaler', 'switchboard-gateway')!);
    hpa.spec.metrics[0].resource.target.averageUtilization = '70%';
    expect(schemaErrors(hpa)).toMatch(/averageUtilization must be integer/);
    expect(schemaErrors({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toBe(
      'no schema for v1/Pod',
    );
  });

  it('puts every namespaced object in the overlay namespace', () => {
    const namespace = objects.find((o) => o.kind === 'Namespace')?.metadata.name;
    expect(namespace).toMatch(/^switchboard/);
    for (const o of objects.filter((x) => x.kind !== 'Namespace'))
      expect({ object: o.metadata.name, namespace: o.metadata.namespace }).toEqual({
        object: o.metadata.name,
        namespace,
      });
  });

  it('runs the gateway, each worker and the migrations Job from one image, APP picking the app', () => {
    const images = new Set(
      podSpecs.flatMap((p) => (p.spec.containers as Dict[]).map((c) => c.image as string)),
    );
    expect(images.size).toBe(1);
    const [image] = images;
    expect(image).toMatch(/:[\w.-]+$/);
    if (overlay === 'prod') expect(image).not.toMatch(/:latest$/);
    for (const app of APPS) expect({ app, APP: envOf(container(app)).APP }).toEqual({ app, APP: app });
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(
      APPS.map((a) => `switchboard-${a}`).sort(),
    );
    const migrate = find(objects, 'Job', 'switchboard-migrate')!;
    expect(migrate.spec.template.spec.containers[0].command).toEqual([
      'node_modules/.bin/prisma',
      'migrate',
      'deploy',
    ]);
  });

  it('probes the gateway on its port and each worker on METRICS_PORT: /healthz for liveness, /readyz for readiness', () => {
    for (const app of APPS) {
      const c = container(app);
      const port = app === 'gateway' ? GATEWAY_PORT : WORKER_PORT;
      const portName = (c.ports as { name: string; containerPort: number }[]).find(
        (p) => p.containerPort === port,
      )?.name;
      expect({ app, portName }).toEqual({ app, portName: expect.any(String) });
      expect(envOf(c)[app === 'gateway' ? 'PORT' : 'METRICS_PORT']).toBe(String(port));
      for (const [probe, route] of [
        ['startupProbe', '/healthz'],
        ['livenessProbe', '/healthz'],
        ['readinessProbe', '/readyz'],
      ]) {
        expect({ app, probe, get: c[probe]?.httpGet }).toEqual({
          app,
          probe,
          get: { path: route, port: portName },
        });
      }
    }
  });

  it('gives every container requests and a memory limit, and runs it as non-root with a read-only root', () => {
    for (const { name, spec } of podSpecs) {
      expect({ name, runAsNonRoot: spec.securityContext?.runAsNonRoot }).toEqual({
        name,
        runAsNonRoot: true,
      });
      for (const c of spec.containers as Dict[]) {
        expect({ name, requests: Object.keys(c.resources?.requests ?? {}).sort() }).toEqual({
          name,
          requests: ['cpu', 'memory'],
        });
        expect({ name, memoryLimit: Boolean(c.resources?.limits?.memory) }).toEqual({
          name,
          memoryLimit: true,
        });
        expect({ name, securityContext: c.securityContext }).toEqual({
          name,
          securityContext: expect.objectContaining({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          }),
        });
      }
    }
  });

  it('sets only settings the configuration knows (a misspelt variable would be silently ignored)', () => {
    const known = new Set([
      ...Object.keys(ConfigSchema.shape),
      'APP',
      'NODE_OPTIONS',
      'HOME',
      'OTEL_SERVICE_NAME',
    ]);
    const isKnown = (name: string) => known.has(name) || name.startsWith('OTEL_');
    const set = [
      ...podSpecs.flatMap((p) => (p.spec.containers as Dict[]).flatMap((c) => Object.keys(envOf(c)))),
      ...objects
        .filter((o) => o.kind === 'ConfigMap' || o.kind === 'Secret')
        .flatMap((o) => Object.keys(o.data ?? {})),
    ];
    expect(set.length).toBeGreaterThan(10);
    expect(set.filter((name) => !isKnown(name))).toEqual([]);
    // The drain fits in the grace period Kubernetes gives before SIGKILL.
    const config = objects.find((o) => o.kind === 'ConfigMap')!;
    const graceMs = Number(config.data.SHUTDOWN_GRACE_MS);
    for (const d of deployments)
      expect(d.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(graceMs);
  });

  it('reads ConfigMaps and Secrets that exist in the overlay, or the one Secret prod expects beforehand', () => {
    const refs = podSpecs.flatMap((p) =>
      (p.spec.containers as Dict[]).flatMap((c) => [
        ...((c.envFrom ?? []) as Dict[]).map((e) =>
          e.configMapRef ? ['ConfigMap', e.configMapRef.name] : ['Secret', e.secretRef.name],
        ),
        ...((c.env ?? []) as Dict[])
          .filter((e) => e.valueFrom?.secretKeyRef)
          .map((e) => ['Secret', e.valueFrom.secretKeyRef.name]),
      ]),
    ) as [string, string][];
    expect(refs.length).toBeGreaterThan(5);
    for (const [kind, name] of refs) {
      const external = overlay === 'prod' && kind === 'Secret' && name === 'switchboard-secrets';
      expect({ kind, name, found: external || Boolean(find(objects, kind, name)) }).toEqual({
        kind,
        name,
        found: true,
      });
    }
  });

  it('covers every app with a PodDisruptionBudget that selects its pods', () => {
    const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget');
    for (const app of APPS) {
      const labels = deployment(app).spec.template.metadata.labels as Record<string, string>;
      const covering = pdbs.filter((p) => matches(p.spec.selector.matchLabels, labels));
      expect({ app, pdbs: covering.length }).toEqual({ app, pdbs: 1 });
    }
  });

  it('selects its own pods with each Deployment and the gateway Service', () => {
    for (const d of deployments)
      expect(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
    // A PodMonitor (docs/DEPLOYMENT.md) selects every pod of the install by this label.
    for (const d of deployments)
      expect(d.spec.template.metadata.labels['app.kubernetes.io/part-of']).toBe('switchboard');
    const service = find(objects, 'Service', 'switchboard-gateway')!;
    expect(matches(service.spec.selector, deployment('gateway').spec.template.metadata.labels)).toBe(true);
    expect(service.spec.ports[0].targetPort).toBe('http');
  });

  it('scales the gateway on CPU with an HPA, and no worker (KEDA owns those)', () => {
    const hpas = objects.filter((o) => o.kind === 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.spec.scaleTargetRef)).toEqual([
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'switchboard-gateway' },
    ]);
    const [hpa] = hpas;
    expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
    expect(hpa.spec.metrics[0].resource.name).toBe('cpu');
    for (const worker of WORKERS) expect(deployment(worker).spec.replicas).toBeUndefined();
  });

  it.each(WORKERS)('scales %s with a KEDA ScaledObject on the depth of its own queues', (worker) => {
    const scaled = find(objects, 'ScaledObject', `switchboard-${worker}`)!;
    expect(scaled.spec.scaleTargetRef.name).toBe(deployment(worker).metadata.name);
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.spec.maxReplicaCount).toBeGreaterThanOrEqual(scaled.spec.minReplicaCount);
    expect(scaled.spec.fallback.replicas).toBeGreaterThanOrEqual(scaled.spec.minReplicaCount);
    const [trigger] = scaled.spec.triggers as Dict[];
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata.serverAddress).toMatch(/^https?:\/\/[\w.-]+(:\d+)?$/);
    const query = trigger.metadata.query as string;
    // The gateway's gauge (apps/gateway/src/gateway.module.ts), identical on every gateway
    // replica: max across them, summed over the states that are work.
    expect(query).toMatch(/^sum\(max by \(queue, state\) \(switchboard_queue_jobs\{.*\}\)\)$/);
    expect(query).toContain('state=~"waiting|prioritized|active"');
    const queues = /queue=~?"([^"]+)"/.exec(query)?.[1].split('|');
    expect(queues?.sort()).toEqual([...SCALED_QUEUES[worker]].sort());
    for (const queue of queues ?? []) expect(Object.values(QueueName)).toContain(queue);
    if (overlay === 'prod') expect(query).toContain(`namespace="${scaled.metadata.namespace}"`);
    // One replica's share: its concurrency setting's default.
    const setting = {
      'harness-worker': 'HARNESS_CONCURRENCY',
      'triage-worker': 'TRIAGE_CONCURRENCY',
      'hooks-worker': 'HOOKS_CONCURRENCY',
    }[worker];
    const concurrency = ConfigSchema.shape[setting as 'HARNESS_CONCURRENCY'].parse(undefined);
    expect(trigger.metadata.threshold).toBe(String(concurrency));
  });
});
