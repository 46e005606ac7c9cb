#!/usr/bin/env python3
"""Hostile inputs for the git checkout and the PDF reader (issue 51): each input is made here,
in a temporary folder, and run through the release binary within a fixed time; for each run the
peak resident memory (of the command, and of its PDF reader processes), the wall time and the
outcome (the exit code and what the command said it left out or refused) are measured. A normal
small repository and a normal small PDF are the baselines, so memory reads as a ratio.

Git inputs (a bare repository whose objects are written here directly, so even a tree 20,000
folders deep or 200,001 files wide takes seconds to make), each synced as a `[[sources]]` entry
with `docs-agent sources sync`, then searched once with `docs-agent search`: folders nested
1,500 and 20,000 deep, a folder of 200,001 files (over MAX_FILES) and one of 199,999 (at it), a
name of 300 bytes, a path over 1,024 bytes, links out of docs/ and to themselves, names with
terminal escapes, names that climb (`..`, `../../x`, `/abs`, `.git`), and one 4 MB blob named 64
times (a few kB of repository, 256 MB once checked out).

PDF inputs (written byte by byte here, no library), each alone in a workspace's docs/ beside one
Markdown file, run through `docs-agent index rebuild`, then `docs-agent search`: text bombs on
one page (90 MB of text from 329 kB of PDF; 250 MB from 919 kB; 250 MB of one-letter `Tj`
operators from 369 kB) and over 10,000 pages sharing one stream (10 GB of text from 112 kB),
outlines that loop (through /Next, through /First), an outline of 100,000 entries and one 9,999
levels deep, page trees 10,000 levels deep, 100,000 and 10,000 pages wide, and one that is its
own kid, a PDF of 500,000 objects, an array nested 100,000 deep, a truncated PDF and a corrupt
one.

usage: python3 bench/hostile.py [--binary PATH] [--only WORD] [--timeout S] [--keep]
  --binary   the docs-agent to run (default target/release/docs-agent; build it first)
  --only     run only the inputs whose name holds WORD (repeatable); the baselines always run
  --timeout  outer limit per run in seconds (default 300): a run past it is killed and says so
  --keep     keep the temporary folder (its path is printed)
The table is printed and written to target/hostile/report.md. Nothing is asserted.
"""
import argparse, ctypes, hashlib, os, pathlib, platform, re, shutil, signal, subprocess, tempfile, time, zlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MIB = 1024 * 1024

# --------------------------------------------------------------------------------------------
# Running a command: peak RSS of it and of the processes it leaves behind, wall time, outcome.
# --------------------------------------------------------------------------------------------


def become_subreaper():
    """Makes this process the reaper of its orphaned descendants (Linux), so the PDF reader's
    zygote, which outlives the command by a moment (it dies on the command's death signal),
    is reaped here and its peak RSS (which holds its workers', reaped by it) is read too."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


TIME = '/usr/bin/time'


def run(cmd, cwd, env, timeout, log):
    """Runs `cmd`; returns a dict: exit, seconds, rss_main (MiB), rss_other (MiB: the largest of
    the orphans reaped after it, i.e. the PDF reader's zygote, whose peak holds its workers'),
    cpu (s: user + system, of the command and of those orphans), stdout, stderr, timed_out.

    The command's peak is read by GNU time, which forks it: a process started straight from
    this one would count this Python process's memory too (Linux folds the memory the process
    had before `exec`, here a copy of Python's, into its peak)."""
    out_path, err_path, time_path = log + '.out', log + '.err', log + '.time'
    timed = os.access(TIME, os.X_OK)
    if timed:
        cmd = [TIME, '-o', time_path, '-f', '%M %x %U %S'] + cmd
    with open(out_path, 'wb') as out, open(err_path, 'wb') as err:
        started = time.monotonic()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             start_new_session=True)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() - started > timeout:
                timed_out = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        seconds = time.monotonic() - started
        p.returncode = os.waitstatus_to_exitcode(status)
    code, rss, cpu = p.returncode, usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    if timed:
        try:
            lines = pathlib.Path(time_path).read_text().splitlines()
        except OSError:
            lines = []
        last = lines[-1].split() if lines else []
        if len(last) == 4:
            rss, code, cpu = int(last[0]), int(last[1]), float(last[2]) + float(last[3])
        for line in lines:
            if line.startswith('Command terminated by signal'):
                code = -int(line.split()[-1])
    # The orphans (the PDF reader's zygote, killed with the command): reap them, read their peak.
    other = 0
    deadline = time.monotonic() + 10
    while True:
        try:
            pid, _, rusage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if time.monotonic() > deadline:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                deadline = time.monotonic() + 10
            time.sleep(0.005)
            continue
        other = max(other, rusage.ru_maxrss)
        cpu += rusage.ru_utime + rusage.ru_stime
    stdout = pathlib.Path(out_path).read_bytes()
    stderr = pathlib.Path(err_path).read_bytes()
    return {'exit': code, 'seconds': seconds, 'cpu': cpu, 'rss_main': rss / 1024, 'rss_other': other / 1024,
            'stdout': stdout, 'stderr': stderr, 'timed_out': timed_out}


def shown(text, limit=150):
    """`text` for one table cell: controls as \\xNN, pipes escaped, at most `limit` characters."""
    out = []
    for ch in text:
        if ch == '|':
            out.append('\\|')
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f'\\x{ord(ch):02x}')
        else:
            out.append(ch)
    text = ''.join(out)
    return text if len(text) <= limit else text[:limit - 1] + '…'


def said(result, step):
    """What a run said about its input, in one line: the refusal, what was left out and why
    (the command's own words, links' targets as X), what was indexed or found."""
    stdout = result['stdout'].decode('utf-8', 'replace').splitlines()
    lines = [l.strip() for l in result['stderr'].decode('utf-8', 'replace').splitlines() + stdout]
    notes = []
    if result['timed_out']:
        notes.append('KILLED at the outer time limit')
    elif result['exit'] < 0:
        notes.append(f'ended on signal {-result["exit"]}')
    if b'\x1b' in result['stdout'] or b'\x1b' in result['stderr']:
        notes.append('A RAW ESC BYTE IN ITS OUTPUT')
    for l in lines:
        if l.startswith('docs-agent: source') and 'first sync' not in l:
            why = re.sub(r'^docs-agent: source \S+: (commit [0-9a-f]+: )?', '', l).split('; nothing was synced')[0]
            notes.append(f'refused: {why}')
    left = [l[len('left out '):] for l in lines if l.startswith('left out ')]
    if left:
        why = {}
        for l in left:
            name, reason = l.split(': ', 1) if ': ' in l else (l, '(no reason on this line)')
            reason = re.sub(r'a link to .*?, outside', 'a link to X, outside', reason)
            reason = reason.replace(' (links never lead out of the tree)', '')
            why.setdefault(reason, []).append(name or '""')
        notes.append(f'left out {len(left)}: ' + '; '.join(f'{", ".join(names)} ("{r}")' for r, names in why.items()))
    if step == 'sync':
        foreign = [l for l in stdout if not l.startswith(('hostile: ', '  left out '))]
        if foreign:
            notes.append(f'{len(foreign)} line of stdout not its own: {foreign[0]!r}')
        if any(': now serving ' in l for l in lines) and not left:
            notes.append('served whole')
    for w in (l for l in lines if l.startswith('warning:')):
        path, _, what = w[len('warning: '):].partition(': ')
        notes.append(f'{path} skipped: {what.removesuffix("; skipped")}')
    if step == 'rebuild':
        rebuilt = [l for l in lines if l.startswith('rebuilt ')]
        if rebuilt:
            found = re.search(r': (\d+) docs, (\d+) sections', rebuilt[0])
            notes.append(f'indexed {found[1]} docs, {found[2]} sections' if found else rebuilt[0])
    if result.get('outside'):
        notes.append(f'WROTE OUTSIDE THE TREE: {", ".join(result["outside"])}')
    if step == 'git checkout':
        notes.append('git\'s own checkout of docs/, for comparison' if result['exit'] == 0 else 'git failed')
    if step == 'search':
        hits = [l for l in stdout if '#' in l]
        first = f', first {hits[0].split()[0]}' if hits else ''
        notes.append(f'{len(hits)} hit{"" if len(hits) == 1 else "s"}{first}')
    if not notes:
        notes.extend([l for l in lines if l][-1:])
    return '; '.join(notes)


# --------------------------------------------------------------------------------------------
# Git repositories, written object by object (loose objects, as git writes them).
# --------------------------------------------------------------------------------------------


class Repo:
    def __init__(self, path):
        self.path = path
        subprocess.run(['git', 'init', '-q', '--bare', str(path)], check=True)
        self.written = set()

    def obj(self, kind, body):
        data = f'{kind} {len(body)}'.encode() + b'\0' + body
        sha = hashlib.sha1(data).hexdigest()
        if sha not in self.written:
            folder = self.path / 'objects' / sha[:2]
            folder.mkdir(exist_ok=True)
            target = folder / sha[2:]
            if not target.exists():
                target.write_bytes(zlib.compress(data, 6))
            self.written.add(sha)
        return sha

    def blob(self, data):
        return self.obj('blob', data if isinstance(data, bytes) else data.encode())

    def tree(self, entries):
        """`entries`: (mode, name bytes, sha); sorted as git sorts them (a folder as name + /)."""
        key = lambda e: e[1] + (b'/' if e[0] == '40000' else b'')
        body = b''.join(m.encode() + b' ' + n + b'\0' + bytes.fromhex(s) for m, n, s in sorted(entries, key=key))
        return self.obj('tree', body)

    def build(self, spec):
        """A tree from a nested dict: name -> bytes (a file), ('link', target), or a dict."""
        entries = []
        for name, value in spec.items():
            name = name if isinstance(name, bytes) else name.encode()
            if isinstance(value, dict):
                entries.append(('40000', name, self.build(value)))
            elif isinstance(value, tuple) and value[0] == 'link':
                entries.append(('120000', name, self.blob(value[1])))
            elif isinstance(value, tuple) and value[0] == 'tree':
                entries.append(('40000', name, value[1]))
            else:
                entries.append(('100644', name, self.blob(value)))
        return self.tree(entries)

    def commit(self, tree):
        who = 'Bench <bench@example.com> 1700000000 +0000'
        sha = self.obj('commit', f'tree {tree}\nauthor {who}\ncommitter {who}\n\nhostile input\n'.encode())
        subprocess.run(['git', '-C', str(self.path), 'update-ref', 'refs/heads/main', sha], check=True)
        subprocess.run(['git', '-C', str(self.path), 'symbolic-ref', 'HEAD', 'refs/heads/main'], check=True)
        return sha


PAGE = '# Refunds\n\nA refund is paid within thirty days of the request. The word bluebird marks it.\n'


def normal_docs():
    docs = {f'guide-{i:02}.md': f'# Guide {i}\n\nStep {i} of the setup: run the installer, then set the proxy.\n'
            for i in range(20)}
    docs['refunds.md'] = PAGE
    return docs


# Files that a climbing name (`../../escape.md`, `sub/../../up.md`) would write outside the tree.
CLIMBED = ('escape.md', 'up.md')

# Inputs also checked out by git itself (`git checkout`), as the cost of writing the same files.
GIT_COMPARED = ('git baseline', '(at MAX_FILES)', 'named 64 times')


def git_inputs(wide):
    """(name, what it is, builder(repo)): each builder writes the repository's objects and commit."""
    def baseline(r):
        r.commit(r.build({'README.md': '# Repo\n', 'docs': normal_docs()}))

    def deep(n):
        def make(r):
            inner = r.build({'page.md': PAGE})
            for _ in range(n):
                inner = r.tree([('40000', b'd', inner)])
            r.commit(r.build({'docs': {'refunds.md': PAGE, 'd': ('tree', inner)}}))
        return make

    def wide_tree(n):
        def make(r):
            blob = r.blob(PAGE)
            docs = r.tree([('100644', f'p{i:06}.md'.encode(), blob) for i in range(n)])
            r.commit(r.tree([('40000', b'docs', docs)]))
        return make

    def long_name(r):
        r.commit(r.build({'docs': {'refunds.md': PAGE, 'n' * 297 + '.md': PAGE}}))

    def long_path(r):
        spec = {'x' * 200 + '.md': PAGE}
        for i in range(5):
            spec = {chr(ord('a') + i) * 200: spec}
        spec['refunds.md'] = PAGE
        r.commit(r.build({'docs': spec}))

    def links(r):
        chain = {f'hop{i}.md': ('link', f'hop{i + 1}.md') for i in range(9)}
        chain['hop9.md'] = PAGE
        r.commit(r.build({
            'secret.md': '# Secret\n\nThe bluebird key is outside docs.\n',
            'docs': {
                'refunds.md': PAGE,
                'out.md': ('link', '../secret.md'),
                'abs.md': ('link', '/etc/passwd'),
                'self.md': ('link', 'self.md'),
                'ping.md': ('link', 'pong.md'),
                'pong.md': ('link', 'ping.md'),
                'here': ('link', '.'),
                'alias.md': ('link', 'refunds.md'),
                **chain,
            },
        }))

    def escapes(r):
        r.commit(r.build({'docs': {
            'refunds.md': PAGE,
            '\x1b[31mred.md': PAGE,
            '\x1b]0;pwned\x07.md': PAGE,
            'line\nbreak.md': PAGE,
            '\x1b[2J': {'inside.md': PAGE},
        }}))

    def climbing(r):  # the names in CLIMBED, each would land outside the tree if written
        blob = r.blob(PAGE)
        docs = r.tree([('100644', b'refunds.md', blob), ('100644', b'..', blob), ('100644', b'../../escape.md', blob),
                       ('100644', b'/tmp/abs.md', blob), ('40000', b'.git', r.build({'config': '[core]\n'})),
                       ('100644', b'sub/../../up.md', blob)])
        r.commit(r.tree([('40000', b'docs', docs)]))

    def copies(n, size):
        def make(r):
            paragraph = 'A refund is paid within thirty days of the request; the word bluebird marks it. '
            text = '# Copied\n\n' + (paragraph * (size // len(paragraph)))[:size - 12] + '\n'
            blob = r.blob(text)
            docs = r.tree([('100644', f'copy{i:03}.md'.encode(), blob) for i in range(n)])
            r.commit(r.tree([('40000', b'docs', docs)]))
        return make

    return [
        ('git baseline: 21 small files', baseline),
        ('git deep: 1,500 folders', deep(1500)),
        ('git deep: 20,000 folders', deep(20000)),
        (f'git wide: {wide + 1:,} files (over MAX_FILES)', wide_tree(wide + 1)),
        (f'git wide: {wide - 1:,} files (at MAX_FILES)', wide_tree(wide - 1)),
        ('git name of 300 bytes', long_name),
        ('git path of 1,212 bytes', long_path),
        ('git links: out, /etc/passwd, self, a loop, a folder, 10 hops', links),
        ('git names with terminal escapes and a newline', escapes),
        ('git names `..`, `../../x`, `/tmp/x`, `.git`', climbing),
        ('git one 4 MB blob named 64 times', copies(64, 4_000_000)),
    ]


# --------------------------------------------------------------------------------------------
# PDFs, written byte by byte.
# --------------------------------------------------------------------------------------------


class Pdf:
    """Objects by number; `bytes()` writes them with a classic xref table, or (`packed`) with
    the dictionaries in compressed object streams and an xref stream (PDF 1.5), so 100,000
    small objects take little room."""

    def __init__(self):
        self.objects = []

    def reserve(self):
        self.objects.append(None)
        return len(self.objects)

    def put(self, num, body):
        self.objects[num - 1] = ('obj', body.encode() if isinstance(body, str) else body)
        return num

    def add(self, body):
        return self.put(self.reserve(), body)

    def stream(self, data, compress=True, extra=''):
        if compress:
            data, extra = zlib.compress(data, 9), extra + ' /Filter /FlateDecode'
        self.objects.append(('stream', f'<< /Length {len(data)}{extra} >>'.encode(), data))
        return len(self.objects)

    def bytes(self, root, packed=False):
        out = bytearray(b'%PDF-1.5\n%\xe2\xe3\xcf\xd3\n')
        if not packed:
            offsets = []
            for num, o in enumerate(self.objects, 1):
                offsets.append(len(out))
                out += f'{num} 0 obj\n'.encode()
                out += o[1] if o[0] == 'obj' else o[1] + b'\nstream\n' + o[2] + b'\nendstream'
                out += b'\nendobj\n'
            xref = len(out)
            out += f'xref\n0 {len(offsets) + 1}\n0000000000 65535 f \n'.encode()
            out += b''.join(f'{off:010d} 00000 n \n'.encode() for off in offsets)
            out += f'trailer\n<< /Size {len(offsets) + 1} /Root {root} 0 R >>\nstartxref\n{xref}\n%%EOF\n'.encode()
            return bytes(out)
        entries = {}  # num -> (type, field2, field3)
        plain = [n for n, o in enumerate(self.objects, 1) if o[0] == 'obj']
        next_num = len(self.objects) + 1
        streams = []
        for start in range(0, len(plain), 1000):
            chunk = plain[start:start + 1000]
            stm = next_num
            next_num += 1
            head, body = [], bytearray()
            for index, num in enumerate(chunk):
                head.append(f'{num} {len(body)}')
                body += self.objects[num - 1][1] + b'\n'
                entries[num] = (2, stm, index)
            head = (' '.join(head) + '\n').encode()
            streams.append((stm, head, body, len(chunk)))
        for num, o in enumerate(self.objects, 1):
            if o[0] == 'stream':
                entries[num] = (1, len(out), 0)
                out += f'{num} 0 obj\n'.encode() + o[1] + b'\nstream\n' + o[2] + b'\nendstream\nendobj\n'
        for stm, head, body, n in streams:
            data = zlib.compress(head + bytes(body), 9)
            entries[stm] = (1, len(out), 0)
            out += (f'{stm} 0 obj\n<< /Type /ObjStm /N {n} /First {len(head)} /Length {len(data)} '
                    f'/Filter /FlateDecode >>\nstream\n').encode() + data + b'\nendstream\nendobj\n'
        xref_num = next_num
        entries[xref_num] = (1, len(out), 0)
        size = xref_num + 1
        rows = bytearray(b'\x00' + (0).to_bytes(4, 'big') + (65535).to_bytes(4, 'big'))
        for num in range(1, size):
            t, a, b = entries[num]
            rows += bytes([t]) + a.to_bytes(4, 'big') + b.to_bytes(4, 'big')
        data = zlib.compress(bytes(rows), 9)
        xref = len(out)
        out += (f'{xref_num} 0 obj\n<< /Type /XRef /Size {size} /W [1 4 4] /Root {root} 0 R /Length {len(data)} '
                f'/Filter /FlateDecode >>\nstream\n').encode() + data + b'\nendstream\nendobj\n'
        out += f'startxref\n{xref}\n%%EOF\n'.encode()
        return bytes(out)


def pdf_string(text):
    return '(' + text.replace('\\', '\\\\').replace('(', '\\(').replace(')', '\\)') + ')'


def text_ops(lines):
    ops = 'BT /F1 12 Tf 16 TL 72 720 Td\n'
    for line in lines:
        ops += f'{pdf_string(line)} Tj T*\n'
    return (ops + 'ET\n').encode()


def page_dict(parent, content, font, extra=''):
    return (f'<< /Type /Page /Parent {parent} 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R '
            f'/Resources << /Font << /F1 {font} 0 R >> >>{extra} >>')


FONT = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'
MANUAL = [['Installing', 'Run the installer and follow the prompts.'],
          ['Configuring the proxy', 'Set proxy.url in bluebird.toml.'],
          ['Troubleshooting', 'Error E42 means the token expired.']]


def manual(outline='plain'):
    """The tests' three-page manual (src/pdf/fixtures.rs), with an outline: `plain`, `next`
    (the last entry's /Next is itself) or `first` (an entry's /First is itself)."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    kids = [pdf.reserve() for _ in MANUAL]
    for kid, lines in zip(kids, MANUAL):
        pdf.put(kid, page_dict(pages, pdf.stream(text_ops(lines)), font))
    pdf.put(pages, f'<< /Type /Pages /Kids [{" ".join(f"{k} 0 R" for k in kids)}] /Count {len(kids)} >>')
    outlines, guide, install, proxy, trouble = (pdf.reserve() for _ in range(5))

    def item(num, title, page, parent, prev=None, nxt=None, first=None, last=None, count=None):
        body = f'<< /Title {pdf_string(title)} /Parent {parent} 0 R /Dest [{page} 0 R /XYZ null null null]'
        for key, value in (('Prev', prev), ('Next', nxt), ('First', first), ('Last', last)):
            if value:
                body += f' /{key} {value} 0 R'
        pdf.put(num, body + (f' /Count {count}' if count else '') + ' >>')

    pdf.put(outlines, f'<< /Type /Outlines /First {guide} 0 R /Last {trouble} 0 R /Count 2 >>')
    item(guide, 'Guide', kids[0], outlines, nxt=trouble, first=install if outline != 'first' else guide, last=proxy,
         count=2)
    item(install, 'Installing', kids[0], guide, nxt=proxy)
    item(proxy, 'Configuring the proxy', kids[1], guide, prev=install)
    item(trouble, 'Troubleshooting', kids[2], outlines, prev=guide, nxt=trouble if outline == 'next' else None)
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R /Outlines {outlines} 0 R >>')
    return pdf.bytes(catalog)


LINE = 'Bluebird ' * 114  # 1,026 bytes of text, as the tests' text_bomb


def text_bomb_page(megabytes, line=LINE):
    """One page whose content is `megabytes` MB of `(line) Tj` in Flate streams of 8 MB each."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    chunk = f'{pdf_string(line)} Tj\n'.encode()
    per_stream = 8_000_000 // len(chunk)
    total = megabytes * 1_000_000 // len(chunk)
    streams = []
    done = 0
    while done < total:
        n = min(per_stream, total - done)
        data = (b'BT /F1 12 Tf\n' if done == 0 else b'') + chunk * n + (b'ET\n' if done + n >= total else b'')
        streams.append(pdf.stream(data))
        done += n
    contents = ' '.join(f'{s} 0 R' for s in streams)
    page = pdf.add(f'<< /Type /Page /Parent {pages} 0 R /MediaBox [0 0 612 792] /Contents [{contents}] '
                   f'/Resources << /Font << /F1 {font} 0 R >> >> >>')
    pdf.put(pages, f'<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R >>')
    return pdf.bytes(catalog)


def text_bomb_pages(pages_n, kilobytes):
    """`pages_n` pages all drawing one Flate stream of `kilobytes` kB of text."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    chunk = f'{pdf_string(LINE)} Tj\n'.encode()
    content = pdf.stream(b'BT /F1 12 Tf\n' + chunk * (kilobytes * 1000 // len(LINE)) + b'ET\n')
    kids = [pdf.add(page_dict(pages, content, font)) for _ in range(pages_n)]
    pdf.put(pages, f'<< /Type /Pages /Kids [{" ".join(f"{k} 0 R" for k in kids)}] /Count {pages_n} >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R >>')
    return pdf.bytes(catalog, packed=True)


def one_page_pdf(pdf, font, pages, extra=''):
    content = pdf.stream(text_ops(['Configuring the proxy', 'Set proxy.url in bluebird.toml.']))
    return pdf.add(page_dict(pages, content, font, extra))


def outline_wide(n):
    """A one-page PDF whose outline is `n` entries in a row."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    page = one_page_pdf(pdf, font, pages)
    pdf.put(pages, f'<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>')
    outlines = pdf.reserve()
    items = [pdf.reserve() for _ in range(n)]
    for i, num in enumerate(items):
        body = f'<< /Title (Entry {i}) /Parent {outlines} 0 R /Dest [{page} 0 R /Fit]'
        if i:
            body += f' /Prev {items[i - 1]} 0 R'
        if i + 1 < n:
            body += f' /Next {items[i + 1]} 0 R'
        pdf.put(num, body + ' >>')
    pdf.put(outlines, f'<< /Type /Outlines /First {items[0]} 0 R /Last {items[-1]} 0 R /Count {n} >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R /Outlines {outlines} 0 R >>')
    return pdf.bytes(catalog, packed=True)


def outline_deep(n):
    """A one-page PDF whose outline is `n` entries each the /First of the one before."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    page = one_page_pdf(pdf, font, pages)
    pdf.put(pages, f'<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>')
    outlines = pdf.reserve()
    items = [pdf.reserve() for _ in range(n)]
    for i, num in enumerate(items):
        parent = items[i - 1] if i else outlines
        body = f'<< /Title (Level {i}) /Parent {parent} 0 R /Dest [{page} 0 R /Fit] /Count 1'
        if i + 1 < n:
            body += f' /First {items[i + 1]} 0 R /Last {items[i + 1]} 0 R'
        pdf.put(num, body + ' >>')
    pdf.put(outlines, f'<< /Type /Outlines /First {items[0]} 0 R /Last {items[0]} 0 R /Count 1 >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R /Outlines {outlines} 0 R >>')
    return pdf.bytes(catalog, packed=True)


def pages_deep(n):
    """A page tree `n` /Pages nodes deep above its one page."""
    pdf = Pdf()
    catalog, font = pdf.reserve(), pdf.add(FONT)
    nodes = [pdf.reserve() for _ in range(n)]
    page = one_page_pdf(pdf, font, nodes[-1])
    for i, num in enumerate(nodes):
        kid = nodes[i + 1] if i + 1 < n else page
        parent = f' /Parent {nodes[i - 1]} 0 R' if i else ''
        pdf.put(num, f'<< /Type /Pages /Kids [{kid} 0 R] /Count 1{parent} >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {nodes[0]} 0 R >>')
    return pdf.bytes(catalog, packed=True)


def pages_wide(n):
    """One /Pages node with `n` pages, all drawing one small stream (so the file stays small)."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    content = pdf.stream(text_ops(['Configuring the proxy', 'Set proxy.url in bluebird.toml.']))
    kids = [pdf.add(page_dict(pages, content, font)) for _ in range(n)]
    pdf.put(pages, f'<< /Type /Pages /Kids [{" ".join(f"{k} 0 R" for k in kids)}] /Count {n} >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R >>')
    return pdf.bytes(catalog, packed=True)


def pages_cyclic():
    """A page tree whose /Pages node is its own kid, beside one real page, and a second node
    whose kid is the first."""
    pdf = Pdf()
    catalog, pages, other, font = pdf.reserve(), pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    page = one_page_pdf(pdf, font, pages)
    pdf.put(pages, f'<< /Type /Pages /Kids [{pages} 0 R {page} 0 R {other} 0 R] /Count 2 >>')
    pdf.put(other, f'<< /Type /Pages /Kids [{pages} 0 R] /Parent {pages} 0 R /Count 1 >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R >>')
    return pdf.bytes(catalog)


def nested_array(n):
    """A one-page PDF whose page holds an array nested `n` deep."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    page = one_page_pdf(pdf, font, pages, extra=' /Deep ' + '[' * n + ']' * n)
    pdf.put(pages, f'<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R >>')
    return pdf.bytes(catalog)


def many_objects(n):
    """The one-page PDF beside `n` objects that nothing uses (empty dictionaries, packed)."""
    pdf = Pdf()
    catalog, pages, font = pdf.reserve(), pdf.reserve(), pdf.add(FONT)
    page = one_page_pdf(pdf, font, pages)
    pdf.put(pages, f'<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>')
    pdf.put(catalog, f'<< /Type /Catalog /Pages {pages} 0 R >>')
    for _ in range(n):
        pdf.add('<< >>')
    return pdf.bytes(catalog, packed=True)


def corrupt():
    """A PDF header, then the manual's bytes with every 50th byte flipped, and a bad xref."""
    data = bytearray(manual())
    for i in range(20, len(data), 50):
        data[i] ^= 0x5a
    return bytes(data[:-40]) + b'startxref\n999999999\n%%EOF\n'


def pdf_inputs():
    return [
        ('pdf baseline: the tests\' 3-page manual', 'proxy', lambda: manual()),
        ('pdf text bomb: 1 page, 90 MB of text', 'bluebird', lambda: text_bomb_page(90)),
        ('pdf text bomb: 1 page, 250 MB of text', 'bluebird', lambda: text_bomb_page(250)),
        ('pdf operator bomb: 1 page, 250 MB of `(a) Tj`', 'bluebird', lambda: text_bomb_page(250, 'a')),
        ('pdf text bomb: 10,000 pages x 1 MB shared stream (10 GB of text)', 'bluebird',
         lambda: text_bomb_pages(10_000, 1000)),
        ('pdf cyclic outline: /Next to itself', 'proxy', lambda: manual('next')),
        ('pdf cyclic outline: /First to itself', 'proxy', lambda: manual('first')),
        ('pdf outline of 100,000 entries', 'proxy', lambda: outline_wide(100_000)),
        ('pdf outline 9,999 levels deep', 'proxy', lambda: outline_deep(9_999)),
        ('pdf page tree 10,000 levels deep', 'proxy', lambda: pages_deep(10_000)),
        ('pdf page tree 100,000 pages wide', 'proxy', lambda: pages_wide(100_000)),
        ('pdf page tree 10,000 pages wide', 'proxy', lambda: pages_wide(10_000)),
        ('pdf 500,000 objects (empty dictionaries)', 'proxy', lambda: many_objects(500_000)),
        ('pdf page tree that is its own kid', 'proxy', pages_cyclic),
        ('pdf array nested 100,000 deep', 'proxy', lambda: nested_array(100_000)),
        ('pdf truncated: the manual cut at 60%', 'proxy', lambda: manual()[:len(manual()) * 6 // 10]),
        ('pdf corrupt: bytes flipped, xref offset wrong', 'proxy', corrupt),
    ]


# --------------------------------------------------------------------------------------------


def size_of(path):
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(folder, f)).st_size
            except OSError:
                pass
    return total


def human(n):
    for unit, scale in (('GB', 1e9), ('MB', 1e6), ('kB', 1e3)):
        if n >= scale:
            return f'{n / scale:.1f} {unit}'
    return f'{n} B'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--binary', default=str(ROOT / 'target' / 'release' / 'docs-agent'),
                        help='the docs-agent to run (default target/release/docs-agent)')
    parser.add_argument('--only', action='append', default=[], metavar='WORD',
                        help='only the inputs whose name holds WORD (repeatable); the baselines always run')
    parser.add_argument('--timeout', type=float, default=300, help='outer limit per run, in seconds (default 300)')
    parser.add_argument('--wide', type=int, default=200_000, help='MAX_FILES: the wide trees are this +1 and -1')
    parser.add_argument('--keep', action='store_true', help='keep the temporary folder')
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        raise SystemExit(f'{binary}: not found; build it first (cargo build --release)')
    reaper = become_subreaper()
    load = os.getloadavg()
    base = pathlib.Path(tempfile.mkdtemp(prefix='hostile-'))
    env = {k: v for k, v in os.environ.items() if not k.startswith(('DOCS_AGENT_', 'LLM_')) and k != 'WORKSPACE'}
    env.update(HOME=str(base / 'home'), XDG_DATA_HOME=str(base / 'home' / 'data'), DOCS_AGENT_LOG='warn',
               NO_COLOR='1')
    rows = []

    def chosen(name):
        return 'baseline' in name or not args.only or any(w.lower() in name.lower() for w in args.only)

    def record(name, step, size, result):
        rows.append((name, step, size, result))
        print(f'{name} | {step} | {human(size)} | {result["rss_main"]:.1f} MiB (+ reader {result["rss_other"]:.1f}) '
              f'| {result["seconds"]:.2f} s ({result["cpu"]:.2f} s CPU) | exit {result["exit"]} '
              f'| {shown(said(result, step), 200)}', flush=True)

    try:
        for i, (name, make) in enumerate(git_inputs(args.wide)):
            if not chosen(name):
                continue
            case = base / f'git{i}'
            case.mkdir()
            repo = Repo(case / 'repo.git')
            started = time.monotonic()
            make(repo)
            made = time.monotonic() - started
            size = size_of(case / 'repo.git')
            print(f'# {name}: made in {made:.1f} s, {human(size)}', flush=True)
            (case / 'docs-agent.toml').write_text(
                f'state_dir = "{case / "state"}"\n\n[[sources]]\nname = "hostile"\ngit = "{case / "repo.git"}"\n'
                f'branch = "main"\npath = "docs"\nevery = "0"\n')
            cmd = [binary, '--config', str(case / 'docs-agent.toml')]
            for step, rest in (('sync', ['sources', 'sync']), ('search', ['search', 'bluebird refund'])):
                result = run(cmd + rest, case, env, args.timeout, str(case / step))
                # Whether a climbing name wrote anything outside the tree.
                out = [p for p in case.rglob('*') if p.name in CLIMBED and p.is_file()]
                out += [pathlib.Path(p) for p in ('/tmp/abs.md',) if os.path.lexists(p)]
                result['outside'] = [str(p) for p in out]
                record(name, step, size, result)
            shutil.rmtree(case / 'state', ignore_errors=True)
            if any(word in name for word in GIT_COMPARED):
                # git's own checkout of the same docs/ into a new folder, the same disk, same run.
                (case / 'wt').mkdir()
                own = ['git', '-c', 'core.bare=false', '--git-dir', str(case / 'repo.git'), '--work-tree',
                       str(case / 'wt'), 'checkout', '-q', '-f', 'main', '--', 'docs']
                genv = dict(env, GIT_INDEX_FILE=str(case / 'git-index'))
                record(name, 'git checkout', size, run(own, case, genv, args.timeout, str(case / 'git')))
                shutil.rmtree(case / 'wt', ignore_errors=True)
        def pdf_case(case, name, word, pdfs, index=''):
            """`pdfs` (name to bytes) beside one Markdown page, rebuilt then searched for `word`."""
            docs = case / 'ws' / 'docs'
            docs.mkdir(parents=True)
            for pdf_name, data in pdfs.items():
                (docs / pdf_name).write_bytes(data)
            (docs / 'refunds.md').write_text(PAGE)
            # An hour old: a file written within 2 s of being indexed is read again by the next
            # command (`index::store::RACY_NS`), and the search is to be timed on a settled index.
            for f in docs.iterdir():
                os.utime(f, (time.time() - 3600, time.time() - 3600))
            size = sum(len(data) for data in pdfs.values())
            print(f'# {name}: {human(size)}', flush=True)
            (case / 'docs-agent.toml').write_text(f'state_dir = "{case / "state"}"\n' + index)
            cmd = [binary, '--config', str(case / 'docs-agent.toml'), '--workspace', str(case / 'ws')]
            for step, rest in (('rebuild', ['index', 'rebuild']), ('search', ['search', word])):
                record(name, step, size, run(cmd + rest, case, env, args.timeout, str(case / step)))
            shutil.rmtree(case / 'state', ignore_errors=True)

        for i, (name, word, make) in enumerate(pdf_inputs()):
            if chosen(name):
                pdf_case(base / f'pdf{i}', name, word, {'manual.pdf': make()})
        # Several PDFs that each run out of time, then a good one: read two at a time
        # (`pdf::READERS`), so they cost about n / 2 times index.pdf_seconds, not n times, and the
        # good one after them is read meanwhile.
        name = 'pdf: 4 slow PDFs (250 MB text bombs), index.pdf_seconds = 2, then the manual'
        if chosen(name):
            bomb = text_bomb_page(250)
            pdfs = {f'slow{n}.pdf': bomb for n in range(4)} | {'zz-manual.pdf': manual()}
            pdf_case(base / 'pdf-slow', name, 'proxy', pdfs, '[index]\npdf_seconds = 2\n')
    finally:
        if args.keep:
            print(f'kept {base}')
        else:
            shutil.rmtree(base, ignore_errors=True)

    baseline = {}
    for name, step, _, r in rows:
        if 'baseline' in name:
            baseline[(name.split()[0], step)] = r['rss_main']
    lines = ['| input | step | size on disk | peak RSS (MiB) | vs. baseline | PDF reader peak RSS (MiB) | time (s) '
             '| CPU (s) | exit | outcome |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---|']
    for name, step, size, r in rows:
        base_rss = baseline.get((name.split()[0], step))
        ratio = f'{r["rss_main"] / base_rss:.2f}x' if base_rss else '-'
        other = f'{r["rss_other"]:.1f}' if name.startswith('pdf') else '-'
        lines.append(f'| {shown(name, 80)} | {step} | {human(size)} | {r["rss_main"]:.1f} | {ratio} | {other} | '
                     f'{r["seconds"]:.2f} | {r["cpu"]:.2f} | {r["exit"]} | {shown(said(r, step), 240)} |')
    head = (f'`python3 bench/hostile.py --binary {args.binary}`; {platform.node()}, {os.cpu_count()} cores, '
            f'{time.strftime("%Y-%m-%d")}; outer limit {args.timeout:.0f} s per run; load average '
            f'{load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end'
            + ('' if reaper else '; NOT a subreaper: the PDF reader\'s peak is not measured')
            + ('' if os.access(TIME, os.X_OK) else f'; no {TIME}: peaks include this script\'s own memory') + '\n\n')
    table = head + '\n'.join(lines) + '\n'
    out = ROOT / 'target' / 'hostile'
    out.mkdir(parents=True, exist_ok=True)
    (out / 'report.md').write_text(table)
    print()
    print(table)
    print(f'written to {out / "report.md"}')


if __name__ == '__main__':
    main()
