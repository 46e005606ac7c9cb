#!/usr/bin/env python3
"""Slowloris against `docs-agent serve` (issue 13): N connections that never finish their
headers are held open (re-opened as the server cuts them), while a normal client keeps asking
`/v1/ask`. Prints how many asks were answered, their latency, and how many flood connections
the server refused or cut, with the same asks timed before the flood as the baseline of the
same run. Asserts nothing.

usage: bench/slowloris.py [BINARY] [CONNECTIONS] [SECONDS]
       (default target/release/docs-agent, 10000, 20; build it first)
Raises its own open-file limit to the hard limit; the server gets BENCH_SERVER_NOFILE (4096).
"""
import asyncio, json, os, resource, shutil, statistics, subprocess, sys, tempfile, time, hashlib, pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else str(ROOT / 'target' / 'release' / 'docs-agent')
FLOOD = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
TOKEN = 'slowloris-bench-token-0123456789'

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

ws = tempfile.mkdtemp()
shutil.copytree(ROOT / 'workspace', ws, dirs_exist_ok=True)
digest = hashlib.sha256(TOKEN.encode()).hexdigest()
pathlib.Path(ws, 'docs-agent.toml').write_text(
    f'[serve]\nlisten = "127.0.0.1:0"\nrate_per_minute = 100000000\nmax_sessions_per_principal = 100000000\nsessions_per_minute = 100000000\nmax_turns_per_principal = 100000\nmax_followers_per_principal = 100000\n\n[[serve.tokens]]\nprincipal = "bench"\nsha256 = "{digest}"\nroles = ["ask"]\n')
env = dict(os.environ, WORKSPACE=ws, LLM_MODEL='scripted')
# The server gets a common open-file limit (BENCH_SERVER_NOFILE, default 4096), so a flood larger
# than that is what it would meet in production.
SERVER_NOFILE = int(os.environ.get('BENCH_SERVER_NOFILE', '4096'))
server = subprocess.Popen([BIN, 'serve'], cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (SERVER_NOFILE, hard)))
line = server.stderr.readline()
host, port = line.split('serving on http://')[1].split()[0].rsplit(':', 1)
port = int(port)

BODY = json.dumps({"question": "how long is the refund window"}).encode()
ASK = (f'POST /v1/ask HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\n'
       f'content-length: {len(BODY)}\r\nconnection: close\r\n\r\n').encode() + BODY


def ask_once():
    import socket
    start = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(ASK)
            data = b''
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        ok = data.startswith(b'HTTP/1.1 200') and b'14 days' in data
        return ok, (time.perf_counter() - start) * 1e3
    except OSError:  # a refused or timed-out ask counts as not answered
        return False, (time.perf_counter() - start) * 1e3


def asker(seconds, queue):
    """Asks one after another for `seconds`, in its own process (so the flood's event loop
    cannot slow the asks down), and sends the results back."""
    until = time.perf_counter() + seconds
    results = []
    while time.perf_counter() < until:
        results.append(ask_once())
    queue.put(results)


stats = {'opened': 0, 'refused': 0, 'cut': 0, 'shed': 0}


async def holder(until):
    while time.perf_counter() < until:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except Exception:
            stats['refused'] += 1
            await asyncio.sleep(0.05)
            continue
        stats['opened'] += 1
        writer.write(b'GET /healthz HTTP/1.1\r\nhost: x\r\n')
        try:
            # Trickle a header line every second, never the blank line that ends them.
            while time.perf_counter() < until:
                data = await asyncio.wait_for(reader.read(256), 1.0)
                stats['shed' if data.startswith(b'HTTP/1.1 503') else 'cut'] += 1
                break
        except asyncio.TimeoutError:
            try:
                writer.write(b'x-a: b\r\n')
            except Exception:
                pass
        except Exception:
            stats['cut'] += 1
        writer.close()
        await asyncio.sleep(1.0)  # reopen after a pause, as slowloris does to keep its count


def summary(name, results):
    answered = [ms for ok, ms in results if ok]
    if not answered:
        return f'| {name} | 0 / {len(results)} | - | - |'
    answered.sort()
    p99 = answered[min(len(answered) - 1, int(len(answered) * 0.99))]
    return f'| {name} | {len(answered)} / {len(results)} | {statistics.median(answered):.1f} | {p99:.1f} |'


def ask_in_process(seconds):
    import multiprocessing
    queue = multiprocessing.Queue()
    process = multiprocessing.Process(target=asker, args=(seconds, queue))
    process.start()
    return process, queue


async def main():
    process, queue = ask_in_process(5)
    before = await asyncio.get_running_loop().run_in_executor(None, queue.get)
    process.join()
    until = time.perf_counter() + SECONDS
    tasks = [asyncio.create_task(holder(until)) for _ in range(FLOOD)]
    await asyncio.sleep(3)  # let the flood build up before timing asks
    process, queue = ask_in_process(until - time.perf_counter() - 1)
    during = await asyncio.get_running_loop().run_in_executor(None, queue.get)
    process.join()
    await asyncio.gather(*tasks)
    print(f'{FLOOD} half-open connections held for {SECONDS:.0f} s against {BIN} serve '
          f'(open-file limit {SERVER_NOFILE}; max_connections 512, header_read_timeout_secs 10; '
          f'rate limit raised), scripted model:\n')
    print('| phase | asks answered | median ms | p99 ms |')
    print('|---|---:|---:|---:|')
    print(summary('before the flood (5 s)', before))
    print(summary('during the flood', during))
    print(f"\nflood connections opened {stats['opened']}, refused by the OS {stats['refused']}, "
          f"answered 503 {stats['shed']}, closed by the server (evicted or cut) {stats['cut']}")


try:
    asyncio.run(main())
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(ws)
