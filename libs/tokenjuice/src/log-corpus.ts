import type { ContentKind, KindHint } from './types';

/**
 * The log-format corpus: the common shapes of logs and command output a tool returns, generated
 * deterministically, each with what must survive `full` compaction (docs/adr/0033). Timestamps are
 * the reason it exists: `10:36:00` reads like `path:line:` to a careless eye, and detection must never
 * take a log for search results (issue 30).
 */
export interface LogCorpusEntry {
  /** The format, as the table-driven tests name it. */
  name: string;
  text: string;
  /** What the caller knows besides the bytes (the tool's name, its arguments). */
  hint?: KindHint;
  /** The kind detection must choose. */
  kind: ContentKind;
  /** Lines that must be shown whole in the `full` compaction: every error, fatal and failure line. */
  mustKeep: string[];
  /** Search results only: the matches and files the header must count. */
  matches?: number;
  files?: number;
}

const START = Date.UTC(2026, 10, 30, 10, 36, 0);
const LINES = 400;
/** A failure every 97th line: four in 400, none in the head or tail a log compactor keeps anyway. */
const EVERY = 97;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** The i-th line's instant: 1.37 s apart, so seconds and minutes both move. */
function at(i: number): Date {
  return new Date(START + i * 1370);
}

/** `2026-11-30T10:36:00` and the fraction of a second, from the instant. */
function isoParts(d: Date): { date: string; time: string; ms: string } {
  const iso = d.toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19), ms: iso.slice(20, 23) };
}

/** One routine message and one failure message, varied so no two lines repeat. */
function message(i: number): string {
  return `worker-${i % 4} processed job ${1000 + i} in ${(i * 37) % 250} ms (queue depth ${(i * 7) % 19})`;
}
function failure(i: number): string {
  return `worker-${i % 4} job ${1000 + i} failed: connection reset by peer after ${(i % 5) + 1} attempts`;
}

interface Generated {
  text: string;
  failures: string[];
}

/** A log of LINES lines with a failure every EVERY-th; `line` writes one line from its instant. */
function generate(line: (d: Date, i: number, failed: boolean) => string): Generated {
  const lines: string[] = [];
  const failures: string[] = [];
  for (let i = 0; i < LINES; i++) {
    const failed = i % EVERY === EVERY - 1;
    const l = line(at(i), i, failed);
    lines.push(l);
    if (failed) failures.push(l);
  }
  return { text: lines.join('\n'), failures };
}

/** `ERROR` for the failures, the third of them `FATAL`. */
function level(i: number, failed: boolean, info = 'INFO'): string {
  if (!failed) return info;
  return Math.floor(i / EVERY) === 2 ? 'FATAL' : 'ERROR';
}

function logEntry(name: string, g: Generated, hint?: KindHint): LogCorpusEntry {
  return { name, text: g.text, hint, kind: 'log', mustKeep: g.failures };
}

/** Timestamped log formats, each 400 lines with four failures. */
function timestampedLogs(): LogCorpusEntry[] {
  return [
    logEntry(
      'ISO-8601, Z (the issue-30 log)',
      generate((d, i, f) => {
        const p = isoParts(d);
        return `${p.date}T${p.time}Z ${level(i, f)} ${f ? failure(i) : message(i)}`;
      }),
    ),
    logEntry(
      'ISO-8601 without a timestamp (control)',
      generate((_, i, f) => `${level(i, f)} ${f ? failure(i) : message(i)}`),
    ),
    logEntry(
      'RFC 3339, fractional seconds and +hh:mm offset',
      generate((d, i, f) => {
        const p = isoParts(d);
        const h = pad((d.getUTCHours() + 1) % 24);
        return `${p.date}T${h}${p.time.slice(2)}.${p.ms}+01:00 ${level(i, f)} ${f ? failure(i) : message(i)}`;
      }),
    ),
    logEntry(
      'RFC 3339, space instead of T, microseconds and -hh:mm offset',
      generate((d, i, f) => {
        const p = isoParts(d);
        const h = pad((d.getUTCHours() + 19) % 24);
        return `${p.date} ${h}${p.time.slice(2)}.${p.ms}${pad(i % 1000, 3)}-05:00 [${level(i, f).toLowerCase()}] ${f ? failure(i) : message(i)}`;
      }),
    ),
    logEntry(
      'bracketed ISO-8601 with milliseconds',
      generate((d, i, f) => {
        const p = isoParts(d);
        return `[${p.date}T${p.time}.${p.ms}Z] [${level(i, f)}] [api] ${f ? failure(i) : message(i)}`;
      }),
    ),
    logEntry(
      'syslog RFC 3164',
      generate((d, i, f) => {
        const day = String(d.getUTCDate()).padStart(2, ' ');
        const stamp = `${MONTHS[d.getUTCMonth()]} ${day} ${isoParts(d).time}`;
        const what = f ? `error: ${failure(i)}` : message(i);
        return `${stamp} web-1 queue-worker[${2000 + (i % 3)}]: ${what}`;
      }),
    ),
    logEntry(
      'syslog RFC 5424',
      generate((d, i, f) => {
        const p = isoParts(d);
        const pri = f ? 131 : 134; // local0.err / local0.info
        const sd = `[meta@32473 job="${1000 + i}"]`;
        return `<${pri}>1 ${p.date}T${p.time}.${p.ms}Z web-1 queue-worker ${2000 + (i % 3)} ${f ? 'JOBERR' : 'JOB'} ${sd} ${f ? `${level(i, f)} ${failure(i)}` : message(i)}`;
      }),
    ),
    logEntry(
      'nginx combined access log (5xx are the failures)',
      generate((d, i, f) => {
        const p = isoParts(d);
        const stamp = `${p.date.slice(8, 10)}/${MONTHS[d.getUTCMonth()]}/${p.date.slice(0, 4)}:${p.time} +0000`;
        const status = f ? [500, 502, 503, 504][Math.floor(i / EVERY) % 4] : [200, 200, 304, 201][i % 4];
        return `10.0.${i % 7}.${(i * 13) % 250} - - [${stamp}] "GET /api/items?page=${i % 40} HTTP/1.1" ${status} ${f ? 157 : 2000 + ((i * 131) % 9000)} "https://app.example.com/items" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"`;
      }),
    ),
    logEntry(
      'Apache combined access log with a user (5xx are the failures)',
      generate((d, i, f) => {
        const p = isoParts(d);
        const stamp = `${p.date.slice(8, 10)}/${MONTHS[d.getUTCMonth()]}/${p.date.slice(0, 4)}:${p.time} -0800`;
        const status = f ? 500 : 200;
        return `192.168.1.${i % 200} - frank [${stamp}] "POST /cgi-bin/submit.cgi?id=${i} HTTP/1.0" ${status} ${f ? 535 : 1326 + i} "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"`;
      }),
    ),
    logEntry(
      'Apache error log',
      generate((d, i, f) => {
        const p = isoParts(d);
        const stamp = `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${p.date.slice(8, 10)} ${p.time}.${p.ms}123 ${p.date.slice(0, 4)}`;
        const lvl = f ? 'proxy:error' : 'ssl:info';
        return `[${stamp}] [${lvl}] [pid ${3000 + (i % 5)}] [client 10.0.0.${i % 250}:${40000 + i}] ${f ? `AH00898: ${failure(i)}` : `AH01964: ${message(i)}`}`;
      }),
    ),
    logEntry(
      'JSON lines',
      generate((d, i, f) => {
        const p = isoParts(d);
        const line = {
          time: `${p.date}T${p.time}.${p.ms}Z`,
          level: f ? level(i, f).toLowerCase() : 'info',
          logger: 'queue',
          msg: f ? failure(i) : message(i),
          job: 1000 + i,
          durationMs: (i * 37) % 250,
        };
        return JSON.stringify(line);
      }),
    ),
    logEntry(
      'Python logging',
      generate((d, i, f) => {
        const p = isoParts(d);
        return `${p.date} ${p.time},${p.ms} - app.worker - ${level(i, f)} - ${f ? failure(i) : message(i)}`;
      }),
    ),
    logEntry(
      'Kubernetes container log (CRI)',
      generate((d, i, f) => {
        const p = isoParts(d);
        const ns = `${p.ms}${pad((i * 7919) % 1_000_000, 6)}`;
        return `${p.date}T${p.time}.${ns}Z ${f ? 'stderr' : 'stdout'} F ${f ? `${level(i, f)} ${failure(i)}` : message(i)}`;
      }),
    ),
    logEntry(
      'Go log package',
      generate((d, i, f) => {
        const p = isoParts(d);
        return `${p.date.replace(/-/g, '/')} ${p.time} ${f ? `${level(i, f)}: ${failure(i)}` : message(i)}`;
      }),
    ),
    logEntry(
      'a grep tool returning one file’s timestamped lines (no path, no line numbers)',
      generate((d, i, f) => {
        const p = isoParts(d);
        return `${p.date}T${p.time}Z ${level(i, f)} ${f ? failure(i) : message(i)}`;
      }),
      { tool: 'workspace__grep', args: { pattern: 'worker' } },
    ),
  ];
}

/** Python logging with `logger.exception`: each failure followed by its traceback, which must survive too. */
function pythonTracebacks(): LogCorpusEntry {
  const lines: string[] = [];
  const mustKeep: string[] = [];
  for (let i = 0; i < LINES; i++) {
    const p = isoParts(at(i));
    const failed = i % EVERY === EVERY - 1;
    const l = `${p.date} ${p.time},${p.ms} - app.worker - ${level(i, failed)} - ${failed ? failure(i) : message(i)}`;
    lines.push(l);
    if (!failed) continue;
    const trace = [
      'Traceback (most recent call last):',
      '  File "/srv/app/worker.py", line 88, in run',
      '    result = self.client.post(job.url, json=job.payload, timeout=30)',
      '  File "/srv/app/client.py", line 41, in post',
      '    return self._send("POST", url, **kwargs)',
      `ConnectionResetError: [Errno 104] Connection reset by peer (job ${1000 + i})`,
    ];
    lines.push(...trace);
    mustKeep.push(l, trace[0], trace[trace.length - 1]);
  }
  return { name: 'Python logging with tracebacks', text: lines.join('\n'), kind: 'log', mustKeep };
}

/** `pytest -v`: 150 tests, three failing, with their tracebacks and the short summary. */
function pytestRun(): LogCorpusEntry {
  const lines = [
    '============================= test session starts ==============================',
    'platform linux -- Python 3.12.7, pytest-8.3.4, pluggy-1.5.0 -- /usr/bin/python3',
    'cachedir: .pytest_cache',
    'rootdir: /work/app',
    'configfile: pyproject.toml',
    'collecting ... collected 150 items',
    '',
  ];
  const failing = new Set([41, 97, 133]);
  for (let i = 0; i < 150; i++) {
    const pct = String(Math.floor(((i + 1) * 100) / 150)).padStart(3, ' ');
    lines.push(
      `tests/test_orders.py::test_order_total[case${i}] ${failing.has(i) ? 'FAILED' : 'PASSED'} [${pct}%]`,
    );
  }
  lines.push('', '=================================== FAILURES ===================================');
  const mustKeep: string[] = [];
  for (const i of failing) {
    const header = `__________________________ test_order_total[case${i}] ___________________________`;
    const e = `E       assert ${i * 3} == ${i * 3 + 1}`;
    const where = 'tests/test_orders.py:42: AssertionError';
    lines.push(
      header,
      '',
      `case = ${i}`,
      '',
      '    @pytest.mark.parametrize("case", range(150))',
      '    def test_order_total(case):',
      '>       assert total(case) == case * 3 + (case in FAILING)',
      e,
      `E        +  where ${i * 3} = total(${i})`,
      '',
      where,
    );
    mustKeep.push(e, where);
  }
  const summary = '=================== 3 failed, 147 passed in 4.21s ===================';
  lines.push('=========================== short test summary info ============================');
  for (const i of failing) {
    const l = `FAILED tests/test_orders.py::test_order_total[case${i}] - assert ${i * 3} == ${i * 3 + 1}`;
    lines.push(l);
    mustKeep.push(l);
  }
  lines.push(summary);
  mustKeep.push(summary);
  return {
    name: 'pytest -v',
    text: lines.join('\n'),
    hint: { tool: 'workspace__run_command', args: { command: 'pytest -v' } },
    kind: 'log',
    mustKeep,
  };
}

/** `go test -v ./...`: 120 tests in two packages, two failing. */
function goTestRun(): LogCorpusEntry {
  const lines: string[] = [];
  const mustKeep: string[] = [];
  for (const pkg of ['orders', 'billing']) {
    for (let i = 0; i < 60; i++) {
      const name = `Test${pkg[0].toUpperCase()}${pkg.slice(1)}Case${i}`;
      lines.push(`=== RUN   ${name}`);
      const fails = (pkg === 'orders' && i === 23) || (pkg === 'billing' && i === 51);
      if (fails) {
        const why = `    ${pkg}_test.go:${40 + i}: total(${i}) = ${i * 3}, want ${i * 3 + 1}`;
        const end = `--- FAIL: ${name} (0.00s)`;
        lines.push(why, end);
        mustKeep.push(why, end);
      } else lines.push(`--- PASS: ${name} (0.00s)`);
    }
    if (pkg === 'orders') {
      lines.push('FAIL', `FAIL\texample.com/shop/${pkg}\t0.014s`);
      mustKeep.push(`FAIL\texample.com/shop/${pkg}\t0.014s`);
    } else {
      lines.push('FAIL', `FAIL\texample.com/shop/${pkg}\t0.011s`);
      mustKeep.push(`FAIL\texample.com/shop/${pkg}\t0.011s`);
    }
  }
  return {
    name: 'go test -v',
    text: lines.join('\n'),
    hint: { tool: 'workspace__run_command', args: { command: 'go test -v ./...' } },
    kind: 'log',
    mustKeep,
  };
}

/** Genuine search output stays search output, timestamps inside the matched text or not. */
function searchResults(): LogCorpusEntry[] {
  const grep: string[] = [];
  for (let f = 0; f < 12; f++)
    for (let i = 0; i < 8; i++)
      grep.push(`src/mod${f}/file${f}.ts:${10 + i * 7}:  const tenantId = req.tenant${i};`);
  const cols = grep.map((l) => l.replace(/:(\d+):/, ':$1:9:'));
  const logs: string[] = [];
  for (let f = 0; f < 3; f++)
    for (let i = 0; i < 30; i++) {
      const p = isoParts(at(i * 3 + f));
      logs.push(`logs/app-${f}.log:${120 + i}:${p.date}T${p.time}Z ERROR worker-${f} ${failure(i)}`);
    }
  const win: string[] = [];
  for (let f = 0; f < 6; f++)
    for (let i = 0; i < 10; i++)
      win.push(`C:\\work\\app\\src\\mod${f}\\file${f}.ts:${3 + i * 5}:export const tenantId${i} = 1;`);
  const entry = (name: string, lines: string[], files: number): LogCorpusEntry => ({
    name,
    text: lines.join('\n'),
    kind: 'search',
    mustKeep: [],
    matches: lines.length,
    files,
  });
  return [
    entry('grep -rn (path:line:text)', grep, 12),
    entry('ripgrep --vimgrep (path:line:column:text)', cols, 12),
    entry('grep -rn over timestamped log files', logs, 3),
    entry('Windows paths (C:\\…:line:text)', win, 6),
  ];
}

/** The log-format corpus (the checked-in Jest run is in the file corpus beside it). */
export function logFormatCorpus(): LogCorpusEntry[] {
  return [...timestampedLogs(), pythonTracebacks(), pytestRun(), goTestRun(), ...searchResults()];
}
