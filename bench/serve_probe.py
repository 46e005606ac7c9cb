"""What the serve benches (bench/serve_memory.py, bench/collections_memory.py) read from a
running `serve`: its memory from /proc, and its API with the benches' token."""
import json
import urllib.request

TOKEN = 'bench-token-0123456789'


def status(pid):
    """VmRSS and VmHWM of process `pid`, in MiB."""
    fields = {}
    for line in open(f'/proc/{pid}/status'):
        key, _, value = line.partition(':')
        if key in ('VmRSS', 'VmHWM'):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def get(url, path, timeout=30):
    """GET `path` of the serve at `url` with the benches' token, as JSON."""
    req = urllib.request.Request(url + path, headers={'Authorization': f'Bearer {TOKEN}'})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())
