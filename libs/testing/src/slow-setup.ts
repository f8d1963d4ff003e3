/**
 * Integration and end-to-end tests start real services (gateways, workers, child processes) in their
 * hooks; on a busy 2-core CI machine that can take longer than Jest's default 5 s. Files that need
 * more set their own timeout, which overrides this one.
 */
jest.setTimeout(30_000);
