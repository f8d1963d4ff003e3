/**
 * Integration and end-to-end tests start real services (gateways, workers, child processes) in their
 * hooks; on a busy 2-core CI machine that can take a minute (a start compiles the tree), far past
 * Jest's default 5 s: a failing wait still fails, only later. Files that need
 * more set their own timeout, which overrides this one.
 */
jest.setTimeout(120_000);
