import { randomBytes } from 'node:crypto';
import { SecretBox } from './secrets';

describe('SecretBox', () => {
  const key = randomBytes(32).toString('base64');

  it('seals with a key: the stored form does not contain the secret, and opens back', () => {
    const box = new SecretBox(key);
    const sealed = box.seal('whsec_c2VjcmV0');
    expect(sealed).toMatch(/^enc:v1:/);
    expect(sealed).not.toContain('c2VjcmV0');
    expect(box.seal('whsec_c2VjcmV0')).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed)).toBe('whsec_c2VjcmV0');
  });

  it('stores as given without a key, and reads plain rows with or without one', () => {
    expect(new SecretBox().seal('abc')).toBe('abc');
    expect(new SecretBox().open('abc')).toBe('abc');
    expect(new SecretBox(key).open('abc')).toBe('abc');
  });

  it('cannot open a sealed secret without its key, with another key or when tampered with', () => {
    const sealed = new SecretBox(key).seal('secret');
    expect(new SecretBox().open(sealed)).toBeUndefined();
    expect(new SecretBox(randomBytes(32).toString('base64')).open(sealed)).toBeUndefined();
    // One ciphertext character changed (to a character it is not: the old test's swap left it as it
    // was one time in 64).
    const at = sealed.length - 2;
    const tampered = sealed.slice(0, at) + (sealed[at] === 'A' ? 'B' : 'A') + sealed.slice(at + 1);
    expect(tampered).not.toBe(sealed);
    expect(new SecretBox(key).open(tampered)).toBeUndefined();
    expect(new SecretBox(key).open('enc:v1:garbage')).toBeUndefined();
  });
});
