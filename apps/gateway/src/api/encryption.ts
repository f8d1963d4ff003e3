import { AppError, type EncryptionSettings, type SettingsResponse } from '@switchboard/contracts';
import type { TenantCipher } from '@switchboard/platform';

/**
 * `encryption.mode` on or strict needs a key provider (docs/adr/0067): refused with a 400 before
 * anything is written, so the tenant's settings stay as they were.
 */
export function checkEncryptionSettings(
  cipher: TenantCipher,
  encryption: EncryptionSettings | undefined,
): void {
  if (!encryption || encryption.mode === 'off' || cipher.available) return;
  const message = `encryption mode ${encryption.mode} needs a key provider, and this deployment has none (ENCRYPTION_KEYS, ENCRYPTION_KEYS_FILE or VAULT_*)`;
  throw new AppError('validation_failed', message, { issues: [{ path: 'encryption.mode', message }] });
}

/** The mode in force for stored settings, and whether a provider is configured. */
export function presentEncryption(cipher: TenantCipher, settings: unknown): SettingsResponse['encryption'] {
  return { mode: cipher.modeFromSettings(settings), available: cipher.available };
}
