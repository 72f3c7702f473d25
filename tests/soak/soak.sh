#!/usr/bin/env bash
# The soak of issue 28: one private pctld under everything at once for a while, restarted
# every RESTART_S seconds; it must not grow, leave an app pinned or moved, or lose a run from
# its history.
#   - APPS short apps (pbench, 0.1-0.8 s of one core's work; every fourth 1.5-2.5 s, which the
#     history records) started over the run by `pctl run`, from
#     root and from 20 users (uids 60001-60020, [daemon] users = all: their own, as them);
#   - the 20 users ask `pctl status` all the time, and sometimes hold a connection idle;
#   - slow metrics clients: 4 that trickle a byte a second (pctld closes each at 10 s), one
#     that scrapes every 2 s;
#   - the history file write-locked by sqlite3 for 3 s once per restart period;
#   - pctld restarted (SIGTERM, start) every RESTART_S.
# Checks: per pctld instance, its RSS and descriptors read quiet (every app ended,
# connections drained) at its start, after WARM_APPS (8) short apps of root have run and gone
# (the post-warm-up level), and at its end: RssAnon (malloc's heap, what can leak) may end
# at most ANON_SLACK_KB above its start, RSS in all at most RSS_SLACK_KB, descriptors not at all
# (but the history's -wal/-shm, opened once); one instance lives LONG_S under load, and the
# floor of its RssAnon (the least of each 30 s, past its first 60 s) may not climb faster than
# SLOPE_MAX_KB_MIN (a least-squares slope); after each stop no task is left in pctld's cgroup
# group and no app process runs outside the root cpuset; the history's runs only grow across
# restarts and the log has no run "not recorded"; every app run under a live pctld was managed.
# The rule and its numbers: docs/reliability.md, "Memory".
#
# usage: soak.sh [SECONDS [APPS [RESTART_S [LONG_S]]]]: SECONDS of load, in pctld instances of
# RESTART_S each but one of LONG_S (0: none), APPS spread over them in proportion (defaults
# 600 200 60 180: `make soak`, 8 instances; the short mode,
# tests/integration/test_soak_short.sh, runs 20 12 10 0). Each restart adds a few seconds of
# quiet (every app ended, connections drained) on both sides for the measurements.
set -u
: "${TEST_LIB:=$(dirname "$0")/../integration/lib.sh}"
: "${BUILD_DIR:=$(dirname "$0")/../../build}"
: "${PCTL:=$BUILD_DIR/pctl}" "${PCTLD:=$BUILD_DIR/pctld}" "${PBENCH:=$BUILD_DIR/pbench}"
: "${SRC_DIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets and the users"
command -v setpriv >/dev/null || skip "setpriv missing"
command -v sqlite3 >/dev/null || skip "sqlite3 missing (the history lock)"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
SECONDS_TOTAL=${1:-600}
APPS=${2:-200}
RESTART_S=${3:-60}
LONG_S=${4:-180}
# The rule's numbers (docs/reliability.md, "Memory"); the environment may change them, e.g. to
# show that an injected leak is caught.
: "${ANON_SLACK_KB:=1024}" "${RSS_SLACK_KB:=1536}" "${SLOPE_MAX_KB_MIN:=100}" "${WARM_APPS:=8}"
export ANON_SLACK_KB RSS_SLACK_KB SLOPE_MAX_KB_MIN WARM_APPS
# Under AddressSanitizer (make test-asan) freed memory waits in ASan's quarantine (256 MB) and
# every allocation has shadow memory: RSS says nothing about pctld's own heap there, and
# LeakSanitizer at pctld's exit judges leaks instead. Descriptors, apps and history are judged
# the same.
MEMORY_JUDGED=1
ldd "$PCTLD" 2>/dev/null | grep -q libasan && MEMORY_JUDGED=0
export MEMORY_JUDGED
pctld_setup
trap pctld_cleanup EXIT
PORT=$(python3 "$SRC_DIR/tests/integration/metrics_client.py" free_port)
sed -i "/^\[daemon\]/a users = all\nmetrics_listen = 127.0.0.1:$PORT" "$T/pctl.conf"
sed -i 's/^interval_ms = .*/interval_ms = 200/; s/^decision_ms = .*/decision_ms = 1000/' "$T/pctl.conf"
printf '[policy soak]\nobjective = edp\n' >"$T/policies.d/soak.conf"
cp "$PBENCH" "$T/pbench" # nobody can run it from here
chmod 755 "$T/pbench"
export T GROUP PCTL PCTLD PORT
/usr/bin/python3 - "$SECONDS_TOTAL" "$APPS" "$RESTART_S" "$LONG_S" <<'PY'
import json, os, random, signal, socket, subprocess, sys, threading, time

total, n_apps, restart_s = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
long_s = float(sys.argv[4])
ANON_SLACK_KB, RSS_SLACK_KB = int(os.environ["ANON_SLACK_KB"]), int(os.environ["RSS_SLACK_KB"])
MEMORY_JUDGED = os.environ["MEMORY_JUDGED"] == "1"
SLOPE_MAX_KB_MIN = float(os.environ["SLOPE_MAX_KB_MIN"])
WARM_APPS = int(os.environ["WARM_APPS"])
T, GROUP, PCTL, PCTLD, PORT = (os.environ[k] for k in ("T", "GROUP", "PCTL", "PCTLD", "PORT"))
PORT = int(PORT)
sock, db, log = f"{T}/pctl.sock", f"{T}/history.db", f"{T}/pctld.log"
rng = random.Random(28)
stop = threading.Event()
# Set around each restart: no new app, no status, no metrics client, so that pctld's RSS and
# descriptors are read with nothing in flight, at the start and at the end of each instance.
quiet = threading.Event()
quiet.set()
problems, lock = [], threading.Lock()
stats = {"apps_ok": 0, "apps_refused_down": 0, "apps_failed": 0, "status_ok": 0,
         "status_failed": 0, "scrapes_ok": 0, "scrapes_failed": 0, "trickles_closed": 0,
         "history_locks": 0}

def problem(msg):
    with lock:
        problems.append(msg)
    print("PROBLEM:", msg, flush=True)

def bump(k, n=1):
    with lock:
        stats[k] += n

def as_user(uid):
    return ["setpriv", f"--reuid={uid}", "--regid=65534", "--clear-groups"] if uid else []

# pctld, started and stopped by the driver; down between a stop and the next start.
class Daemon:
    def __init__(self):
        self.p, self.up = None, threading.Event()
    def start(self):
        self.p = subprocess.Popen(["nice", "-n", "5", PCTLD, "--config", f"{T}/pctl.conf", "--foreground"],
                                  stdout=open(log, "a"), stderr=subprocess.STDOUT)
        for _ in range(200):
            if subprocess.run([PCTL, "status", "--socket", sock], capture_output=True).returncode == 0:
                self.up.set()
                return
            time.sleep(0.05)
        problem("pctld did not come up")
    def stop(self):
        self.up.clear()
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=30)
        if rc != 0:
            problem(f"pctld exited {rc} on SIGTERM")
    def pid(self):
        return self.p.pid if self.p else None

d = Daemon()

def sample(pid):
    """(VmRSS, fds, RssAnon, RssFile, RssShmem), kB; None when pctld is gone. RssAnon is
    malloc's heap and the threads' stacks, what a leak grows; RssFile the mapped libraries and
    files, RssShmem the history's -shm."""
    try:
        kb = {}
        for l in open(f"/proc/{pid}/status"):
            k, _, v = l.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                kb[k] = int(v.split()[0])
        return (kb["VmRSS"], len(os.listdir(f"/proc/{pid}/fd")), kb["RssAnon"], kb["RssFile"],
                kb["RssShmem"])
    except (OSError, KeyError, ValueError, IndexError):
        return None

def floor_slope(samples, skip_s=60, window_s=30):
    """kB per minute: the least-squares slope of the floors (the least RssAnon of each window_s,
    when fewest apps are in flight) past the first skip_s; None with fewer than 3 windows."""
    floors = {}
    for t, anon in samples:
        if t >= skip_s:
            w = int((t - skip_s) // window_s)
            floors[w] = min(floors.get(w, anon), anon)
    if len(floors) < 3:
        return None, []
    xs = [skip_s + (w + 0.5) * window_s for w in sorted(floors)]
    ys = [floors[w] for w in sorted(floors)]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope * 60, ys

def runs_in_history():
    r = subprocess.run(["sqlite3", db, "SELECT coalesce(sum(runs),0) FROM apps; SELECT count(*) FROM runs"],
                       capture_output=True, text=True)
    try:
        a, b = r.stdout.split()
        return int(a), int(b)
    except ValueError:
        return None

def group_tasks():
    tasks = []
    base = f"/sys/fs/cgroup/cpuset/{GROUP}"
    for dirpath, _, files in os.walk(base):
        if "tasks" in files:
            tasks += open(f"{dirpath}/tasks").read().split()
    return tasks

app_pids, app_lock = set(), threading.Lock()

def app(uid, long):
    # Long ones (a quarter) live past the estimator's warm-up, so the history records them.
    work = rng.uniform(1.5, 2.5) if long else rng.uniform(0.1, 0.8)
    cmd = as_user(uid) + ["nice", "-n", "10", PCTL, "run", "--quiet", "--socket", sock, "--",
                          f"{T}/pbench", "--p", "0.8", "--t1", f"{work:.2f}"]
    was_up = d.up.is_set()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with app_lock:
        app_pids.add(p.pid)
    _, err = p.communicate()
    with app_lock:
        app_pids.discard(p.pid)
    if p.returncode == 0:
        bump("apps_ok")
    elif not was_up or not d.up.is_set() or "not running" in err:
        bump("apps_refused_down")  # pctld was down for its restart: not managed, and said so
    else:
        bump("apps_failed")
        problem(f"pctl run as uid {uid} failed under a live pctld: {err.strip()[:300]}")

launched = [0]
app_threads = []

def warm_up(n=WARM_APPS):
    """n short apps of root at once, not counted in APPS, before an instance's quiet start:
    what pctld allocates once and keeps (its report table, the history's cache and -wal, its
    app arrays' first sizes) is then in the start figure, which is the post-warm-up level the
    end is held to."""
    ps = [subprocess.Popen(["nice", "-n", "10", PCTL, "run", "--quiet", "--socket", sock, "--",
                            f"{T}/pbench", "--p", "0.8", "--t1", "0.3"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
          for _ in range(n)]
    for p in ps:
        _, err = p.communicate()
        if p.returncode != 0:
            problem(f"a warm-up app failed: {err.strip()[:300]}")

def launch_some(k):
    """Starts the next k apps; a third are root's, the rest the 20 users' in turn."""
    for _ in range(k):
        i = launched[0]
        if i >= n_apps:
            return
        launched[0] += 1
        uid = 0 if i % 3 == 0 else 60001 + i % 20
        t = threading.Thread(target=app, args=(uid, i % 4 == 1))
        t.start()
        app_threads.append(t)

def user(uid):
    while not stop.is_set():
        if quiet.is_set():
            time.sleep(0.2)
            continue
        r = subprocess.run(as_user(uid) + [PCTL, "status", "--socket", sock], capture_output=True)
        bump("status_ok" if r.returncode == 0 else "status_failed")
        if r.returncode and d.up.is_set() and b"not running" not in r.stderr:
            problem(f"uid {uid}: status failed under a live pctld: {r.stderr[:200]}")
        if rng.random() < 0.1:  # an idle connection held a while, let go when quiet comes
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sock)
                until = time.time() + rng.uniform(0.5, 3)
                while time.time() < until and not quiet.is_set():
                    time.sleep(0.1)
                s.close()
            except OSError:
                pass
        time.sleep(rng.uniform(0.5, 3))

def trickler():
    while not stop.is_set():
        if quiet.is_set():
            time.sleep(0.2)
            continue
        try:
            s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
            s.send(b"GET /metrics HTTP/1.1\r\n")
            t0 = time.time()
            while not stop.is_set() and not quiet.is_set() and time.time() - t0 < 20:
                s.send(b"X")
                time.sleep(1)
            s.close()
        except OSError:
            bump("trickles_closed")
            time.sleep(0.5)

def scraper():
    import urllib.request
    while not stop.is_set():
        if quiet.is_set():
            time.sleep(0.2)
            continue
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=5) as r:
                r.read()
            bump("scrapes_ok")
        except Exception:
            bump("scrapes_failed")
        time.sleep(2)

def history_locker():
    while not stop.wait(rng.uniform(restart_s * 0.3, restart_s * 0.7)):
        if quiet.is_set():
            continue
        subprocess.run(["sqlite3", db], input=".timeout 2000\nBEGIN IMMEDIATE;\nSELECT 1;\n.shell sleep 3\nCOMMIT;\n",
                       capture_output=True, text=True)
        bump("history_locks")

instances = []
d.start()
workers = [threading.Thread(target=user, args=(60001 + i,)) for i in range(20)]
workers += [threading.Thread(target=trickler) for _ in range(4)]
workers += [threading.Thread(target=scraper), threading.Thread(target=history_locker)]
for w in workers:
    w.daemon = True
    w.start()
t_start = time.time()
hist_prev = runs_in_history() or (0, 0)
hist_series = [hist_prev]
def managed():
    r = subprocess.run([PCTL, "status", "--json", "--socket", sock], capture_output=True, text=True)
    try:
        return len(json.loads(r.stdout)["apps"])
    except (ValueError, KeyError):
        return -1

def quiet_sample():
    """With nothing in flight: every app gone, connections drained. The least of 3."""
    end = time.time() + 180
    with app_lock:
        busy = len(app_pids)
    while (busy or managed() != 0) and time.time() < end:
        time.sleep(0.3)
        with app_lock:
            busy = len(app_pids)
    if busy or managed() != 0:
        problem("never quiet: apps still running or managed after 180 s")
        return None
    time.sleep(1.5)
    got = [sample(d.pid()) for _ in range(3) if not time.sleep(0.3)]
    got = [g for g in got if g]
    return (min(g[0] for g in got), min(g[1] for g in got), fd_kinds(d.pid()),
            min(g[2] for g in got), min(g[3] for g in got), min(g[4] for g in got)) if got else None

def fd_kinds(pid):
    """What pctld's descriptors are, with numbers blanked: for the message on growth."""
    import collections, re
    kinds = collections.Counter()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                kinds[re.sub(r"[0-9]+", "N", os.readlink(f"/proc/{pid}/fd/{fd}"))] += 1
            except OSError:
                pass
    except OSError:
        pass
    return kinds

# SECONDS of load in all, RESTART_S per pctld instance but the second, which lives LONG_S
# (when there is room for it); the quiet around each restart comes on top. The apps are spread
# over the instances in proportion to their load, evenly over the first 80 % of each.
if long_s > 0 and total >= long_s + restart_s:
    lengths = [restart_s, long_s] + [restart_s] * max(0, round((total - long_s) / restart_s) - 1)
else:
    lengths = [restart_s] * max(1, round(total / restart_s))
n_inst = len(lengths)
due_by = [round(n_apps * sum(lengths[:k + 1]) / sum(lengths)) for k in range(n_inst)]
for k in range(n_inst):
    inst_s = lengths[k]
    inst = {"pid": d.pid(), "samples": [], "anon": [], "long": inst_s == long_s and inst_s > restart_s}
    warm_up()
    inst["quiet_start"] = quiet_sample()
    quiet.clear()
    t_inst = time.time()
    base = launched[0]
    due = due_by[k] - base
    per_s = due / (inst_s * 0.8)
    while time.time() - t_inst < inst_s:
        time.sleep(1)
        launch_some(min(due, int((time.time() - t_inst) * per_s) + 1) - (launched[0] - base))
        s = sample(d.pid())
        if s:
            inst["samples"].append(s)
            inst["anon"].append((time.time() - t_inst, s[2]))
    launch_some(due_by[k] - launched[0])
    quiet.set()
    inst["quiet_end"] = quiet_sample()
    d.stop()
    left = group_tasks()
    if left:
        problem(f"tasks left in pctld's group after a stop: {left[:10]}")
    # Apps running now were handed back: the root cpuset.
    ncpu = os.cpu_count()
    with app_lock:
        running = list(app_pids)
    for ppid in running:
        try:
            kids = open(f"/proc/{ppid}/task/{ppid}/children").read().split()
        except OSError:
            continue
        for kid in kids:
            try:
                cs = open(f"/proc/{kid}/cpuset").read().strip()
            except OSError:
                continue
            if cs != "/":
                problem(f"app {kid} left in cpuset {cs} after pctld stopped")
    h = runs_in_history()
    if h is None:
        problem("cannot read the history after a stop")
    elif h[0] < hist_prev[0] or h[1] < hist_prev[1]:
        problem(f"the history lost runs across a restart: {hist_prev} -> {h}")
    else:
        hist_prev = h
    hist_series.append(h)
    instances.append(inst)
    if k + 1 < n_inst:
        d.start()
stop.set()
for t in app_threads:
    t.join(timeout=60)
for w in workers:
    w.join(timeout=40)
# The apps launched last finish against no pctld: that is fine.
text = open(log, errors="replace").read()
for bad in ("not recorded", "stayed locked", "stayed busy"):
    if bad in text:
        problem(f"the log says a run was {bad}: " + [l for l in text.splitlines() if bad in l][0][:300])
if group_tasks():
    problem("tasks left in the group at the end")
print(f"{'instance':>8} {'rss start':>9} {'rss end':>8} {'anon start':>10} {'anon end':>8} "
      f"{'file end':>8} {'shmem end':>9} {'fds start':>9} {'fds end':>7} {'rss peak':>8} "
      f"{'fds peak':>8}  (kB; start/end: quiet, nothing in flight)")
for i, inst in enumerate(instances):
    a, b, s = inst["quiet_start"], inst["quiet_end"], inst["samples"]
    if not a or not b:
        problem(f"instance {i}: no quiet sample")
        continue
    pr = max((x[0] for x in s), default=0)
    pf = max((x[1] for x in s), default=0)
    print(f"{i:>8} {a[0]:>9} {b[0]:>8} {a[3]:>10} {b[3]:>8} {b[4]:>8} {b[5]:>9} {a[1]:>9} "
          f"{b[1]:>7} {pr:>8} {pf:>8}" + ("  (the long one)" if inst["long"] else ""))
    # The heap: what apps and requests allocate must be freed, and what malloc kept of a
    # busy minute given back (pctld trims when its apps have left, and when its connections
    # have), so quiet again means back to its start, within a little slack.
    if not MEMORY_JUDGED:
        pass
    elif b[3] > a[3] + ANON_SLACK_KB:
        problem(f"instance {i}: RssAnon grew {a[3]} -> {b[3]} kB (slack {ANON_SLACK_KB})")
    if MEMORY_JUDGED and b[0] > a[0] + RSS_SLACK_KB:
        problem(f"instance {i}: RSS grew {a[0]} -> {b[0]} kB (slack {RSS_SLACK_KB})")
    # The history's -wal and -shm are opened at its first write, once: not growth.
    once = sum(n for k, n in b[2].items() if k.endswith(("-wal", "-shm")))
    once -= sum(n for k, n in a[2].items() if k.endswith(("-wal", "-shm")))
    if b[1] - once > a[1]:
        problem(f"instance {i}: descriptors grew {a[1]} -> {b[1]}: {dict(b[2] - a[2])}")
    # Under load, for minutes: no upward trend of the heap's floor.
    if inst["long"]:
        slope, floors = floor_slope(inst["anon"])
        print(f"instance {i} (the long one): RssAnon floors per 30 s past its first minute "
              f"{floors} kB: slope {'?' if slope is None else f'{slope:.0f}'} kB/min "
              f"(limit {SLOPE_MAX_KB_MIN:.0f})")
        if not MEMORY_JUDGED:
            pass
        elif slope is None:
            problem(f"instance {i}: too few samples for the RssAnon trend")
        elif slope > SLOPE_MAX_KB_MIN:
            problem(f"instance {i}: RssAnon climbs {slope:.0f} kB/min under load (floors {floors})")
starts = [inst["quiet_start"][0] for inst in instances if inst["quiet_start"]]
if not MEMORY_JUDGED:
    print("note: pctld runs under AddressSanitizer: its RSS is ASan's (quarantine, shadow "
          "memory), not judged; LeakSanitizer judges leaks at its exit")
elif len(starts) >= 2 and starts[-1] > starts[0] + 2048:
    problem(f"RSS at start grew across restarts: {starts[0]} -> {starts[-1]} kB")
print("history (sum of runs, whole runs kept) after each stop:", hist_series)
print("counts:", json.dumps(stats, sort_keys=True))
if stats["apps_ok"] == 0 or stats["status_ok"] == 0 or stats["scrapes_ok"] == 0:
    problem("no work got through")
if problems:
    print(f"FAIL: {len(problems)} problems")
    sys.exit(1)
print(f"ok: {total:.0f} s of load ({time.time() - t_start:.0f} s with the quiet around restarts), "
      f"{len(instances)} pctld instances, {launched[0]} apps started, {stats['apps_ok']} managed")
PY
