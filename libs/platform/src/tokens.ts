/** Injection tokens for what lives outside the process. Apps inject these; libs never do. */
export const CONFIG = Symbol('CONFIG');
export const DB = Symbol('DB');
/** Prisma on the read replica (DATABASE_READ_URL, docs/adr/0042); null without one. */
export const READ_DB = Symbol('READ_DB');
export const REDIS = Symbol('REDIS');
export const LOGGER = Symbol('LOGGER');
export const METRICS = Symbol('METRICS');
export const TOOLS = Symbol('TOOLS');
export const ADMISSION = Symbol('ADMISSION');
/** Sub-agent tasks (libs/subagents TaskService, docs/adr/0024). */
export const TASKS = Symbol('TASKS');
/** The embedders (libs/providers EmbedderRegistry, docs/adr/0050): `<provider>/<model>` refs resolved. */
export const EMBEDDERS = Symbol('EMBEDDERS');
/** Per-tenant encryption of content at rest (TenantCipher, docs/adr/0067). */
export const CIPHER = Symbol('CIPHER');
