import { randomBytes, createCipheriv, createDecipheriv } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SealedValueError, sealedVersion, isSealed, openSealed, parseSealed, sealValue } from './sealed';
import { KeyProviderError, LocalKeyRing, parseKeyRing, VaultTransit } from './key-provider';

const TENANT = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const b64 = () => randomBytes(32).toString('base64');

describe('sealed values', () => {
  const key = randomBytes(32);

  it('round-trips text and JSON, self-describing its kind and data-key version', () => {
    const text = 'the quokka ate 17 grapes — ünïcode ✓';
    const env = sealValue(key, TENANT, 3, 't', text);
    expect(isSealed(env)).toBe(true);
    expect(env).not.toContain('quokka');
    expect(sealedVersion(env)).toBe(3);
    const parsed = parseSealed(env)!;
    expect(parsed.kind).toBe('t');
    expect(parsed.tenantId).toBe(TENANT);
    expect(openSealed(key, TENANT, parsed)).toBe(text);
    const json = sealValue(key, TENANT, 1, 'j', JSON.stringify({ a: [1, 'x'] }));
    expect(JSON.parse(openSealed(key, TENANT, parseSealed(json)!))).toEqual({ a: [1, 'x'] });
  });

  it('seals the same text differently each time (random IV)', () => {
    expect(sealValue(key, TENANT, 1, 't', 'same')).not.toBe(sealValue(key, TENANT, 1, 't', 'same'));
  });

  it('detects a tampered ciphertext, tag or version, and a wrong key or tenant', () => {
    const env = sealValue(key, TENANT, 2, 't', 'secret text');
    const parts = env.split('.');
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    const tamperedCt = [...parts.slice(0, 6), flip(parts[6])].join('.');
    const tamperedTag = [...parts.slice(0, 5), flip(parts[5]), parts[6]].join('.');
    const otherVersion = [parts[0], parts[1], '3', ...parts.slice(3)].join('.');
    const otherTenant = [...parts.slice(0, 3), OTHER, ...parts.slice(4)].join('.');
    for (const bad of [tamperedCt, tamperedTag, otherVersion, otherTenant]) {
      expect(() => openSealed(key, TENANT, parseSealed(bad)!)).toThrow(SealedValueError);
    }
    expect(() => openSealed(randomBytes(32), TENANT, parseSealed(env)!)).toThrow(SealedValueError);
    expect(() => openSealed(key, OTHER, parseSealed(env)!)).toThrow(SealedValueError);
  });

  it('does not take ordinary strings for sealed values', () => {
    for (const s of ['hello', 'sbe1.', 'sbe1.x.1.a.b.c', 'enc:v1:abc']) expect(isSealed(s)).toBe(false);
    expect(sealedVersion('plain')).toBeUndefined();
  });
});

describe('the local key ring', () => {
  it('parses id:base64 entries, the first current, and refuses malformed ones', () => {
    const a = b64();
    const ring = parseKeyRing(`k2:${a}, k1:${b64()}`);
    expect(ring.map((r) => r.id)).toEqual(['k2', 'k1']);
    expect(ring[0].key.toString('base64')).toBe(a);
    expect(() => parseKeyRing('')).toThrow(/empty/);
    expect(() => parseKeyRing('nocolon')).toThrow(/id:base64/);
    expect(() => parseKeyRing(`k1:${randomBytes(16).toString('base64')}`)).toThrow(/32 bytes/);
    expect(() => parseKeyRing(`k1:${b64()},k1:${b64()}`)).toThrow(/unique/);
  });

  it('reads a file with one entry a line and comments', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ring-'));
    const file = path.join(dir, 'keys');
    writeFileSync(file, `# current first\nnew:${b64()}\nold:${b64()}\n`);
    expect(LocalKeyRing.fromFile(file).currentId).toBe('new');
  });

  it('wraps and unwraps a data key; a KEK not in the ring or an altered wrap is refused', async () => {
    const ring = LocalKeyRing.fromSpec(`k1:${b64()}`);
    const { plaintext, wrapped } = await ring.generateDataKey();
    expect(wrapped).toMatchObject({ provider: 'local', kekId: 'k1' });
    expect(wrapped.wrapped).not.toContain(plaintext.toString('base64url'));
    expect(await ring.unwrap(wrapped)).toEqual(plaintext);
    await expect(LocalKeyRing.fromSpec(`k1:${b64()}`).unwrap(wrapped)).rejects.toThrow(KeyProviderError);
    await expect(ring.unwrap({ ...wrapped, kekId: 'k9' })).rejects.toThrow(/not in the key ring/);
    await expect(ring.unwrap({ ...wrapped, provider: 'vault-transit' })).rejects.toThrow(KeyProviderError);
  });

  it('rewraps under the new current KEK: the old KEK can then be dropped', async () => {
    const k1 = b64();
    const old = LocalKeyRing.fromSpec(`k1:${k1}`);
    const { plaintext, wrapped } = await old.generateDataKey();
    const rotated = LocalKeyRing.fromSpec(`k2:${b64()},k1:${k1}`);
    const rewrapped = await rotated.rewrap(wrapped);
    expect(rewrapped.kekId).toBe('k2');
    expect(await rotated.rewrap(rewrapped)).toBe(rewrapped);
    const withoutOld = new LocalKeyRing([
      { id: 'k2', key: (rotated as unknown as { keys: Map<string, Buffer> }).keys.get('k2')! },
    ]);
    expect(await withoutOld.unwrap(rewrapped)).toEqual(plaintext);
  });
});

/**
 * A local HTTP server speaking Vault Transit's wire format (encrypt, decrypt, rewrap; `vault:vN:`
 * ciphertexts; `{errors: [...]}` on failure; X-Vault-Token checked), with key versions and rotation.
 */
function fakeVault(token: string, keyName: string) {
  const versions = [randomBytes(32)];
  const seen: { path: string; token: string | undefined; body: Record<string, string> }[] = [];
  const enc = (plaintextB64: string) => {
    const v = versions.length;
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', versions[v - 1], iv);
    const ct = Buffer.concat([c.update(Buffer.from(plaintextB64, 'base64')), c.final(), c.getAuthTag()]);
    return `vault:v${v}:${Buffer.concat([iv, ct]).toString('base64')}`;
  };
  const dec = (ciphertext: string) => {
    const m = /^vault:v(\d+):(.+)$/.exec(ciphertext);
    if (!m) throw new Error('invalid ciphertext: no prefix');
    const raw = Buffer.from(m[2], 'base64');
    const d = createDecipheriv('aes-256-gcm', versions[Number(m[1]) - 1], raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(raw.length - 16));
    return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString('base64');
  };
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let s = '';
      req.on('data', (c) => (s += c));
      req.on('end', () => resolve(s));
    });
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.parse((await read(req)) || '{}') as Record<string, string>;
    seen.push({ path: req.url!, token: req.headers['x-vault-token'] as string | undefined, body });
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    if (req.headers['x-vault-token'] !== token) return send(403, { errors: ['permission denied'] });
    const m = new RegExp(`^/v1/transit/(encrypt|decrypt|rewrap)/${keyName}$`).exec(req.url!);
    if (req.method !== 'POST' || !m) return send(404, { errors: [] });
    try {
      if (m[1] === 'encrypt')
        return send(200, { data: { ciphertext: enc(body.plaintext), key_version: versions.length } });
      if (m[1] === 'decrypt') return send(200, { data: { plaintext: dec(body.ciphertext) } });
      return send(200, { data: { ciphertext: enc(dec(body.ciphertext)), key_version: versions.length } });
    } catch (err) {
      return send(400, { errors: [(err as Error).message] });
    }
  };
  const server: Server = createServer((req, res) => void answer(req, res));
  return { server, seen, rotate: () => versions.push(randomBytes(32)) };
}

describe('Vault Transit', () => {
  let vault: ReturnType<typeof fakeVault>;
  let addr: string;
  beforeAll(async () => {
    vault = fakeVault('s.token', 'switchboard');
    await new Promise<void>((r) => vault.server.listen(0, '127.0.0.1', r));
    addr = `http://127.0.0.1:${(vault.server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => vault.server.close(() => r())));

  it('wraps with /encrypt and unwraps with /decrypt, sending the token and base64 plaintext', async () => {
    const provider = new VaultTransit({ addr, token: 's.token', key: 'switchboard' });
    const { plaintext, wrapped } = await provider.generateDataKey();
    expect(wrapped).toMatchObject({ provider: 'vault-transit', kekId: 'switchboard:v1' });
    expect(wrapped.wrapped).toMatch(/^vault:v1:/);
    expect(vault.seen.at(-1)).toMatchObject({
      path: '/v1/transit/encrypt/switchboard',
      token: 's.token',
      body: { plaintext: plaintext.toString('base64') },
    });
    expect(await provider.unwrap(wrapped)).toEqual(plaintext);
    expect(vault.seen.at(-1)).toMatchObject({
      path: '/v1/transit/decrypt/switchboard',
      body: { ciphertext: wrapped.wrapped },
    });
  });

  it('rewraps under the latest key version without seeing the plaintext', async () => {
    const provider = new VaultTransit({ addr, token: 's.token', key: 'switchboard' });
    const { plaintext, wrapped } = await provider.generateDataKey();
    vault.rotate();
    const rewrapped = await provider.rewrap(wrapped);
    expect(vault.seen.at(-1)!.path).toBe('/v1/transit/rewrap/switchboard');
    expect(rewrapped.kekId).toBe('switchboard:v2');
    expect(await provider.unwrap(rewrapped)).toEqual(plaintext);
  });

  it("surfaces Vault's errors: a bad token, a malformed ciphertext, an unreachable server", async () => {
    await expect(
      new VaultTransit({ addr, token: 'wrong', key: 'switchboard' }).generateDataKey(),
    ).rejects.toThrow(/answered 403: permission denied/);
    const provider = new VaultTransit({ addr, token: 's.token', key: 'switchboard' });
    await expect(
      provider.unwrap({ provider: 'vault-transit', kekId: 'x', wrapped: 'garbage' }),
    ).rejects.toThrow(/answered 400/);
    await expect(provider.unwrap({ provider: 'local', kekId: 'k1', wrapped: 'x' })).rejects.toThrow(
      KeyProviderError,
    );
    await expect(
      new VaultTransit({ addr: 'http://127.0.0.1:1', token: 't', key: 'k' }).wrap(randomBytes(32)),
    ).rejects.toThrow(/Vault Transit encrypt failed/);
  });
});
