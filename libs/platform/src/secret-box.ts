import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Secrets a service must read back (triggers' signing secrets, docs/adr/0019; MCP servers' auth
 * headers, docs/adr/0023), so they cannot be hashed; with a key set they are sealed with
 * AES-256-GCM (`enc:v1:<iv>.<tag>.<ciphertext>`, base64url), else stored as given. Both forms are
 * read, so a key can be introduced without rewriting old rows.
 */
const SEALED = 'enc:v1:';

export class SecretBox {
  private readonly key?: Buffer;

  constructor(base64Key?: string) {
    if (base64Key) this.key = Buffer.from(base64Key, 'base64');
  }

  seal(secret: string): string {
    if (!this.key) return secret;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url'));
    return `${SEALED}${parts.join('.')}`;
  }

  /** The secret, or undefined when it was sealed under a key this process does not have. */
  open(stored: string): string | undefined {
    if (!stored.startsWith(SEALED)) return stored;
    if (!this.key) return undefined;
    const [iv, tag, ciphertext] = stored
      .slice(SEALED.length)
      .split('.')
      .map((p) => Buffer.from(p, 'base64url'));
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}
