/**
 * Whether a turn's input says nothing the archivist could distil (docs/adr/0032, `nothing_new`).
 *
 * The rule: a short message (at most {@link MAX_WORDS} words and {@link MAX_CHARS} characters) with
 * no digit, no question, nothing besides its words but sentence punctuation and emoji, and every word
 * a function word (pronouns, determiners, auxiliaries, conjunctions, prepositions) or a phatic one
 * (acknowledgement, thanks, assent, greeting, farewell). Any content word — a noun, a name, a verb saying what to do — or any number makes the
 * message new: "thanks, that helps" and "ok, sounds good, go ahead 👍" say nothing new; "ok, use
 * Postgres", "thanks Bob", "ok 42" and "why?" do. The word lists are closed classes of English plus a
 * small phatic vocabulary; a message in another language is never skipped (the safe side: a model
 * call, not a lost fact).
 */
export function saysNothingNew(input: string): boolean {
  const text = input.trim().replace(/[\u2018\u2019\u02bc]/g, "'");
  if (!text || text.length > MAX_CHARS || /[\d?]/u.test(text)) return false;
  const words = text.toLowerCase().match(/[\p{L}']+/gu) ?? [];
  if (words.length > MAX_WORDS) return false;
  // What is not a word may only be spacing, sentence punctuation and emoji (no braces, brackets or code).
  const rest = text.replace(/[\p{L}']+/gu, '');
  if (!/^(?:[\s.,!;:…—–\-"()]|\p{Extended_Pictographic}|\p{Emoji_Modifier}|\u200d|\ufe0f)*$/u.test(rest))
    return false;
  // Punctuation alone ("...") says nothing at all, which is not the same as nothing new.
  if (words.length === 0 && !/\p{Extended_Pictographic}/u.test(rest)) return false;
  return words.every((w) => VOCABULARY.has(w.replace(/^'+|'+$/g, '')));
}

const MAX_WORDS = 12;
const MAX_CHARS = 80;

/** Closed-class English words: they carry no fact by themselves. */
const FUNCTION_WORDS = `i me my mine you your yours we us our it its this that these those there here
  the a an and or but so then too also just all both of to for with on in at by from as
  is are was were be been am do does did done will would can could shall should may might must have has had
  it's that's i'm i've i'll i'd we're we'll we've you're you'll let's let don't doesn't didn't won't
  can't isn't wasn't not it'll that'll there's`;

/** Acknowledgements, thanks, assent, greetings and farewells. */
const PHATIC_WORDS = `ok okay k kk alright right fine cool great nice good perfect awesome excellent lovely
  wonderful brilliant neat sweet thanks thank thx ty cheers appreciated appreciate much very lot really so
  yes yeah yep yup sure certainly absolutely exactly indeed true agreed agree no nope nah
  got understood understand noted makes make sense sounds sound looks look works work helps helped help
  helpful go ahead on proceed hi hello hey morning afternoon evening night bye goodbye see later soon
  welcome wow oh ah hmm haha lol please`;

const VOCABULARY = new Set(`${FUNCTION_WORDS} ${PHATIC_WORDS}`.split(/\s+/).filter(Boolean));
