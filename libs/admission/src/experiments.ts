import type { Logger } from '@switchboard/observability';
import { ExperimentStore, type ExperimentRow, type ExperimentRunToAdmit } from '@switchboard/store';
import type { Admission } from './admission';

/** Runs admitted at a time while an experiment starts. */
const ADMIT_CONCURRENCY = 8;

/**
 * Starts an experiment (docs/adr/0063): the experiment, its pinned sessions and runs in one
 * transaction (ExperimentStore.create: its refusals write nothing), then each run's item admitted
 * through the normal admission as an operator's prompt at `background` priority, its message
 * carrying sourceRefs {experimentId, datasetItemId, experimentRunId} and an Idempotency-Key of the
 * run (a retry lands on the first admission). The first admission decides for all: when it is
 * refused (a paused tenant, a stopped agent) the experiment is undone and the refusal thrown, so
 * nothing is written; a later refusal marks that run failed and the others go on.
 */
/** An experiment's run admitted: the normal admission, at background priority, with its sourceRefs. */
async function admitRun(
  o: { store: ExperimentStore; admission: Admission },
  tenantId: string,
  experimentId: string,
  run: ExperimentRunToAdmit,
): Promise<void> {
  const admitted = await o.admission.admit({
    tenantId,
    sessionId: run.sessionId,
    kind: 'operator_prompt',
    origin: { kind: 'operator' },
    deliverySurface: 'http_public_enqueue',
    admissionContext: 'control_authenticated',
    body: { type: 'text', text: run.input },
    priority: 'background',
    metadata: { experimentId },
    sourceRefs: { experimentId, datasetItemId: run.datasetItemId, experimentRunId: run.id },
    // A second admission of the run (a retry, a resume) lands on the first.
    idempotencyKey: `experiment-run:${run.id}`,
  });
  await o.store.admitted(run.id, admitted.turnId);
}

/** A run's admission was refused for good: not when another admission of it is only in flight. */
const refusedForGood = (err: unknown) =>
  (err as { code?: unknown } | null)?.code !== 'idempotency_key_in_flight';

/**
 * Admits the runs an experiment's creator left pending (its process died after the transaction,
 * before admitting them all), once the experiment is `olderThanMs` old: the run's Idempotency-Key
 * makes an admission that did happen come back as it was. GET /v1/experiments/:id calls it, so an
 * experiment nobody looks at stays as it is. Answers how many runs it admitted.
 */
export async function resumeExperiment(
  o: { store: ExperimentStore; admission: Admission; logger: Logger },
  tenantId: string,
  experimentId: string,
  olderThanMs: number,
): Promise<number> {
  let admitted = 0;
  for (const run of await o.store.pendingRuns(tenantId, experimentId, olderThanMs)) {
    try {
      await admitRun(o, tenantId, experimentId, run);
      admitted++;
    } catch (err) {
      o.logger.warn({ err, experimentId, runId: run.id }, 'pending experiment run not admitted');
      if (refusedForGood(err)) await o.store.failed(run.id, err instanceof Error ? err.message : String(err));
    }
  }
  return admitted;
}

export async function startExperiment(
  o: { store: ExperimentStore; admission: Admission; logger: Logger },
  tenantId: string,
  e: { datasetId: string; agentId: string; versions: number[] },
): Promise<ExperimentRow> {
  const { experiment, runs } = await o.store.create(tenantId, e);
  const admit = (run: ExperimentRunToAdmit) => admitRun(o, tenantId, experiment.id, run);
  try {
    await admit(runs[0]);
  } catch (err) {
    await o.store.discard(tenantId, experiment.id);
    throw err;
  }
  let next = 1;
  const worker = async () => {
    while (next < runs.length) {
      const run = runs[next++];
      try {
        await admit(run);
      } catch (err) {
        o.logger.warn({ err, experimentId: experiment.id, runId: run.id }, 'experiment run not admitted');
        if (refusedForGood(err)) {
          await o.store.failed(run.id, err instanceof Error ? err.message : String(err));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ADMIT_CONCURRENCY, runs.length) }, worker));
  return experiment;
}
