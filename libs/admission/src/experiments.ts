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
export async function startExperiment(
  o: { store: ExperimentStore; admission: Admission; logger: Logger },
  tenantId: string,
  e: { datasetId: string; agentId: string; versions: number[] },
): Promise<ExperimentRow> {
  const { experiment, runs } = await o.store.create(tenantId, e);
  const admit = async (run: ExperimentRunToAdmit) => {
    const admitted = await o.admission.admit({
      tenantId,
      sessionId: run.sessionId,
      kind: 'operator_prompt',
      origin: { kind: 'operator' },
      deliverySurface: 'http_public_enqueue',
      admissionContext: 'control_authenticated',
      body: { type: 'text', text: run.input },
      priority: 'background',
      metadata: { experimentId: experiment.id },
      sourceRefs: { experimentId: experiment.id, datasetItemId: run.datasetItemId, experimentRunId: run.id },
      idempotencyKey: `experiment-run:${run.id}`,
    });
    await o.store.admitted(run.id, admitted.turnId);
  };
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
        await o.store.failed(run.id, err instanceof Error ? err.message : String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ADMIT_CONCURRENCY, runs.length) }, worker));
  return experiment;
}
