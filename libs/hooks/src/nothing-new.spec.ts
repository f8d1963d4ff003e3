import { saysNothingNew } from './nothing-new';

describe('saysNothingNew (the archivist skips the turn: nothing_new)', () => {
  it.each([
    // What the fixed list of acknowledgements used to catch.
    'ok thanks!',
    'ok',
    'Thank you very much.',
    'hi',
    'Hello!',
    'got it',
    'cheers',
    '👍',
    '🙏🏽',
    'yes',
    'nope',
    // What it missed: short messages of function and phatic words only.
    'thanks, that helps',
    'ok, sounds good',
    'Sounds good, go ahead 👍',
    'yes please, do that',
    'Perfect — that works.',
    'Makes sense, thanks!',
    'Great, let’s do it',
    "that's it, bye",
    'Good morning!',
  ])('%p says nothing new', (text) => {
    expect(saysNothingNew(text)).toBe(true);
  });

  it.each([
    // A content word: a fact, an instruction or a preference.
    'I use Neovim.',
    'ok, use Postgres',
    'thanks, deploy it',
    'yes, the blue one',
    // A proper noun.
    'thanks Bob',
    // A number.
    'ok 42',
    'yes, 3 of them',
    // A question gets an answer that may be new.
    'ok?',
    'why?',
    // A symbol or code.
    'ok -> next',
    '`ok`',
    '{}',
    '[ok]',
    // Punctuation alone.
    '...',
    // Longer than a bare acknowledgement, however phatic.
    'ok ok ok ok ok ok ok ok ok ok ok ok ok',
    'thanks '.repeat(15),
    // Another language: never skipped (no fact is lost, a model call is spent).
    'merci beaucoup',
    // Nothing at all is not "nothing new" (the empty turn has its own rule).
    '',
    '   ',
  ])('%p may say something new', (text) => {
    expect(saysNothingNew(text)).toBe(false);
  });
});
