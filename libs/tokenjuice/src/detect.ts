import { startsWithTimestamp } from './lines';
import type { ContentKind, KindHint } from './types';

const CODE_EXTENSIONS =
  /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs|py|rs|go|java|kt|kts|scala|swift|c|h|cc|cpp|hpp|cs|php|rb|dart)$/i;

/** The file a call's arguments name, when they name one (`path`, `file`, `filename`, `url`). */
function argPath(args: unknown): string | undefined {
  if (!args || typeof args !== 'object') return undefined;
  const a = args as Record<string, unknown>;
  for (const k of ['path', 'file', 'file_path', 'filePath', 'filename', 'url']) {
    if (typeof a[k] === 'string') return a[k].split(/[?#]/)[0];
  }
  return undefined;
}

/** A kind the tool's name, its arguments or the content type say, before the bytes are read. */
export function kindFromHint(hint: KindHint): ContentKind | undefined {
  const type = hint.contentType?.toLowerCase() ?? '';
  if (type.includes('html')) return 'html';
  if (type.includes('json')) return 'json';
  const path = argPath(hint.args);
  if (path) {
    if (/\.(diff|patch)$/i.test(path)) return 'diff';
    if (/\.html?$/i.test(path)) return 'html';
    if (/\.json$/i.test(path)) return 'json';
    if (/\.log$/i.test(path)) return 'log';
    if (CODE_EXTENSIONS.test(path)) return 'code';
  }
  const tool = (hint.tool ?? '').toLowerCase();
  if (/(^|_|\.)(grep|rg|ripgrep|search_code|code_search|find_in_files)($|_)/.test(tool)) return 'search';
  if (/(^|_)diff($|_)/.test(tool)) return 'diff';
  if (/(^|_)(shell|bash|exec|run|command|test|build|logs?)($|_)/.test(tool)) return 'log';
  return undefined;
}

/** `path:line:` (a Windows drive allowed), as `parseSearchLine` reads it, without capturing. */
const SEARCH_LINE = /^(?:[A-Za-z]:[\\/])?[^\s:][^:\n]{0,300}:\d+:/;
/** JSON lines (one object a line): logs, whatever braces they end in. */
const JSON_LINE = /^\s*\{\s*"[^"\n]*"\s*:.*\}\s*$/;
const CODE_LINE =
  /^\s*(import\s|export\s|from\s\S+\simport|(async\s+)?function\s|class\s|interface\s|type\s\w+\s*=|def\s|fn\s|pub\s|impl\s|package\s|#include|public\s|private\s|protected\s|const\s\w+\s*=|let\s|return\b|}\s*$|@\w+)/;
/** Lines that end as statements, blocks and lists do, or are comments. */
const CODE_END = /([;{},]\s*$|^\s*(\/\/|\/\*\*|\*\s|#\s))/;
const LOG_LINE =
  /(\b(error|warn(ing)?|info|debug|fail(ed|ure)?|pass(ed)?|ok|done|exit code)\b|✓|✕|✗|^\s*at\s|^\d{4}-\d\d-\d\dT|^\[\d|^\$ |^> )/i;

/**
 * The kind of a tool result, from its bytes first where they are conclusive (JSON that parses, a
 * unified diff, an HTML document, `path:line:` search output), then from the hint (content type,
 * the file the arguments name, the tool's name), then from how its lines look.
 */
export function detectKind(text: string, hint: KindHint = {}): ContentKind {
  const head = text.slice(0, 4096);
  const trimmed = head.trimStart();
  if ((trimmed.startsWith('{') || trimmed.startsWith('[')) && parsesAsJson(text)) return 'json';
  if (/^diff --git |^--- \S.*\n\+\+\+ \S/m.test(head) && /^@@ /m.test(text)) return 'diff';
  if (/^(<!doctype html|<html[\s>])/i.test(trimmed)) return 'html';
  const hinted = kindFromHint(hint);
  // A search tool's answer is a log when its lines start with timestamps (grep over one file prints no
  // path): its first lines decide (the first alone, mostly), so a search hint stays cheap.
  const stampedSearch =
    hinted === 'search' && startsWithTimestamp(trimmed) && timestamped(head.split('\n', 6));
  if (hinted && hinted !== 'json' && !stampedSearch) return hinted;
  const lines = head.split('\n').filter((l) => l.trim() !== '');
  if (lines.length >= 3) {
    const share = (re: RegExp) => lines.filter((l) => re.test(l)).length / lines.length;
    // A line that starts with a timestamp is never `path:line:` (its date and hour would read as a
    // path, its minutes as a line number); mostly such lines are a log.
    let stamped = 0;
    let search = 0;
    for (const l of lines) {
      if (startsWithTimestamp(l)) stamped++;
      else if (SEARCH_LINE.test(l)) search++;
    }
    if (search / lines.length >= 0.6) return 'search';
    if (stamped / lines.length >= 0.6) return 'log';
    if ((head.match(/<\/?[a-z][a-z0-9]*[\s>/]/gi)?.length ?? 0) > 20) return 'html';
    if (share(JSON_LINE) >= 0.6) return 'log';
    if (share(CODE_LINE) >= 0.25 || share(CODE_END) >= 0.4) return 'code';
    if (share(LOG_LINE) >= 0.1 || lines.length >= 20) return 'log';
  }
  return 'text';
}

/** Three of a text's first lines or more, and most of them start with a timestamp. */
function timestamped(first: string[]): boolean {
  const lines = first.filter((l) => l.trim() !== '');
  return lines.length >= 3 && lines.filter(startsWithTimestamp).length / lines.length >= 0.6;
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
