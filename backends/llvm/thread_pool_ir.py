"""The native code of tensorkiln's thread pool, as LLVM IR text (see ``thread_pool.py``).

One function is what generated code calls for a parallel loop::

    void tk_parallel_for(void (*fn)(void *data, i64 begin, i64 end), void *data,
                         i64 lb, i64 ub, i64 step, i32 threads, i64 cap)

It runs ``fn`` on pieces ``[begin, end)`` of ``[lb, ub)`` (every iteration once) on
``min(threads, cap, trips)`` threads (``threads`` <= 0: every core), the calling thread
one of them, and returns when every piece is done.

The protocol (why the calling thread never waits for a worker that has not started):

* ``@word`` holds ``generation << 32 | next piece``. Taking a piece is a compare-and-swap
  of the whole word, so it succeeds only for the generation the taker read the job for,
  and only while pieces are left. The caller takes pieces like any worker, then waits
  until the pieces *taken* are done (``@done``): a worker still asleep, or busy on a core
  another process holds, simply takes none. (libgomp's join waits for every thread of
  the team, so one late worker stalls the whole loop: milliseconds on a busy machine.)
* Before rewriting the job, the caller sets the piece index to ``LOCKED`` in the old
  generation, so a worker that read the old job cannot take a piece of the new one; it
  then writes the job and publishes ``(generation + 1, 0)``.
* Workers spin on ``@word`` for ``@spin_ns`` after their last piece (kernels of a model
  come back to back), then sleep on a futex; the caller wakes them only when some sleep
  (``@sleepers``: the Dekker pair ``word``/``sleepers`` is sequentially consistent).
* One caller at a time (``@lock``): a second thread launching meanwhile (a worker's
  nested loop, two Python threads calling models) runs its loop alone, serially.
* At most ``cap`` threads join a job (``@joined``): a loop worth two threads does not
  make fifteen spin on its pieces.

Workers are created on first need and never exit; after ``fork`` the child has none and
:func:`after_fork` (``tk_pool_after_fork``) forgets them: the caller then takes every
piece itself.
"""

from __future__ import annotations

#: pieces per thread of a parallel loop: threads take pieces from a shared counter, so
#: one slowed down (by another process on its core) takes fewer of them
PIECES_PER_THREAD = 4
#: the most threads one loop runs on (workers are created up to this minus one)
MAX_THREADS = 256
#: spins between two reads of the clock while a worker waits for work
SPINS_PER_CLOCK_READ = 64
#: spins after which a caller waiting for a worker's last piece yields its core
SPINS_BEFORE_YIELD = 4096
#: how long idle workers spin for the next loop before they sleep, in microseconds:
#: long enough to bridge the serial kernels between a model's parallel loops and the
#: caller's Python between two calls, short enough that an idle process soon sleeps
DEFAULT_SPIN_US = 200

#: futex system call numbers by architecture (the triple's first component)
_FUTEX_SYSCALL = {"x86_64": 202, "aarch64": 98, "riscv64": 98, "powerpc64le": 221, "s390x": 238}
#: a spin-wait hint by architecture (none elsewhere)
_PAUSE = {
    "x86_64": ("call void @llvm.x86.sse2.pause()", "declare void @llvm.x86.sse2.pause()"),
    "aarch64": ("call void @llvm.aarch64.hint(i32 1)", "declare void @llvm.aarch64.hint(i32)"),
}

_TEMPLATE = r"""
; ---- state (hot words on their own cache lines)
@tk_pool_word = internal global i64 0, align 64
@tk_pool_done = internal global i64 0, align 64
@tk_pool_joined = internal global i32 0, align 64
@tk_pool_lock = internal global i32 0, align 64
@tk_pool_seq = internal global i32 0, align 64
@tk_pool_sleepers = internal global i32 0, align 64
@tk_pool_started = internal global i32 0, align 64
@tk_pool_spin_ns = internal global i64 DEFAULT_SPIN_NS, align 64
; the job: fn, data, lb, ub, step, piece size (the first `extra` pieces one more), pieces,
; helpers wanted
@tk_pool_fn = internal global ptr null, align 64
@tk_pool_data = internal global ptr null, align 8
@tk_pool_lb = internal global i64 0, align 8
@tk_pool_ub = internal global i64 0, align 8
@tk_pool_step = internal global i64 0, align 8
@tk_pool_piece = internal global i64 0, align 8
@tk_pool_extra = internal global i64 0, align 8
@tk_pool_pieces = internal global i64 0, align 8
@tk_pool_helpers = internal global i32 0, align 8
; counters: launches, launches run in parallel, pieces run by workers, futex wakes
@tk_pool_counters = internal global [4 x i64] zeroinitializer, align 64
@tk_pool_threads = internal global [MAX_THREADS x i64] zeroinitializer, align 8

declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i64 @syscall(i64, ...)
declare i32 @clock_gettime(i32, ptr)
declare i32 @get_nprocs()
declare i32 @sched_yield()
declare i64 @llvm.smin.i64(i64, i64)
PAUSE_DECLARATION

define internal void @tk_pool_pause() alwaysinline {
  PAUSE_CALL
  ret void
}

define internal void @tk_pool_count(i64 %which, i64 %n) alwaysinline {
  %p = getelementptr inbounds [4 x i64], ptr @tk_pool_counters, i64 0, i64 %which
  %old = atomicrmw add ptr %p, i64 %n monotonic
  ret void
}

define internal i64 @tk_pool_now() {
  %ts = alloca [2 x i64], align 8
  %r = call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts, align 8
  %np = getelementptr inbounds [2 x i64], ptr %ts, i64 0, i64 1
  %ns = load i64, ptr %np, align 8
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %ns
  ret i64 %t
}

; take pieces of generation %gen (its high word) until none is left
define internal void @tk_pool_run_pieces(i64 %gen, i64 %by_worker) {
entry:
  br label %loop
loop:
  %w = load atomic i64, ptr @tk_pool_word acquire, align 8
  %wg = and i64 %w, -4294967296
  %same = icmp eq i64 %wg, %gen
  br i1 %same, label %check, label %out
check:
  %idx = and i64 %w, 4294967295
  %pieces = load atomic i64, ptr @tk_pool_pieces monotonic, align 8
  %more = icmp ult i64 %idx, %pieces
  br i1 %more, label %claim, label %out
claim:
  %fn = load atomic ptr, ptr @tk_pool_fn monotonic, align 8
  %data = load atomic ptr, ptr @tk_pool_data monotonic, align 8
  %lb = load atomic i64, ptr @tk_pool_lb monotonic, align 8
  %ub = load atomic i64, ptr @tk_pool_ub monotonic, align 8
  %step = load atomic i64, ptr @tk_pool_step monotonic, align 8
  %piece = load atomic i64, ptr @tk_pool_piece monotonic, align 8
  %extra = load atomic i64, ptr @tk_pool_extra monotonic, align 8
  %w1 = add i64 %w, 1
  %cx = cmpxchg ptr @tk_pool_word, i64 %w, i64 %w1 acq_rel monotonic
  %ok = extractvalue { i64, i1 } %cx, 1
  br i1 %ok, label %run, label %loop
run:
  ; piece idx: iterations [idx * piece + min(idx, extra), + piece + (idx < extra))
  %lead = call i64 @llvm.smin.i64(i64 %idx, i64 %extra)
  %base = mul i64 %idx, %piece
  %first = add i64 %base, %lead
  %longer = icmp ult i64 %idx, %extra
  %one = zext i1 %longer to i64
  %count = add i64 %piece, %one
  %off = mul i64 %first, %step
  %b = add i64 %lb, %off
  %len = mul i64 %count, %step
  %e0 = add i64 %b, %len
  %e = call i64 @llvm.smin.i64(i64 %e0, i64 %ub)
  call void %fn(ptr %data, i64 %b, i64 %e)
  %d = atomicrmw add ptr @tk_pool_done, i64 1 release
  call void @tk_pool_count(i64 2, i64 %by_worker)
  br label %loop
out:
  ret void
}

define internal ptr @tk_pool_worker(ptr %unused) {
entry:
  %w0 = load atomic i64, ptr @tk_pool_word acquire, align 8
  %g0 = and i64 %w0, -4294967296
  br label %wait
wait:
  %last = phi i64 [ %g0, %entry ], [ %g, %got ], [ %g, %work ], [ %last, %woke ]
  %spin = load atomic i64, ptr @tk_pool_spin_ns monotonic, align 8
  %t0 = call i64 @tk_pool_now()
  %deadline = add i64 %t0, %spin
  br label %spinning
spinning:
  %k = phi i64 [ 0, %wait ], [ %k1, %pause ], [ %k1, %clock ]
  %w = load atomic i64, ptr @tk_pool_word acquire, align 8
  %g = and i64 %w, -4294967296
  %new = icmp ne i64 %g, %last
  br i1 %new, label %got, label %pause
pause:
  call void @tk_pool_pause()
  %k1 = add i64 %k, 1
  %km = and i64 %k1, SPINS_PER_CLOCK_READ_MASK
  %read = icmp eq i64 %km, 0
  br i1 %read, label %clock, label %spinning
clock:
  %t = call i64 @tk_pool_now()
  %over = icmp sgt i64 %t, %deadline
  br i1 %over, label %sleep, label %spinning
sleep:
  %s0 = atomicrmw add ptr @tk_pool_sleepers, i32 1 seq_cst
  %seq = load atomic i32, ptr @tk_pool_seq seq_cst, align 4
  %w2 = load atomic i64, ptr @tk_pool_word seq_cst, align 8
  %g2 = and i64 %w2, -4294967296
  %still = icmp eq i64 %g2, %last
  br i1 %still, label %futex, label %woke
futex:
  %seq64 = zext i32 %seq to i64
  %r = call i64 (i64, ...) @syscall(i64 FUTEX_SYSCALL, ptr @tk_pool_seq, i64 128, i64 %seq64, ptr null)
  br label %woke
woke:
  %s1 = atomicrmw sub ptr @tk_pool_sleepers, i32 1 seq_cst
  br label %wait
got:
  %j = atomicrmw add ptr @tk_pool_joined, i32 1 monotonic
  %helpers = load atomic i32, ptr @tk_pool_helpers monotonic, align 4
  %take = icmp slt i32 %j, %helpers
  br i1 %take, label %work, label %wait
work:
  call void @tk_pool_run_pieces(i64 %g, i64 1)
  br label %wait
}

; (the caller holds @tk_pool_lock)
define internal void @tk_pool_start_workers(i32 %want) {
entry:
  %have = load atomic i32, ptr @tk_pool_started monotonic, align 4
  br label %loop
loop:
  %i = phi i32 [ %have, %entry ], [ %i1, %made ]
  %enough = icmp sge i32 %i, %want
  br i1 %enough, label %done, label %make
make:
  %slot = getelementptr inbounds [MAX_THREADS x i64], ptr @tk_pool_threads, i64 0, i32 %i
  %err = call i32 @pthread_create(ptr %slot, ptr null, ptr @tk_pool_worker, ptr null)
  %failed = icmp ne i32 %err, 0
  br i1 %failed, label %done, label %made
made:
  %tid = load i64, ptr %slot, align 8
  %d = call i32 @pthread_detach(i64 %tid)
  %i1 = add i32 %i, 1
  br label %loop
done:
  %n = phi i32 [ %i, %loop ], [ %i, %make ]
  store atomic i32 %n, ptr @tk_pool_started monotonic, align 4
  ret void
}

define void @tk_parallel_for(ptr %fn, ptr %data, i64 %lb, i64 %ub, i64 %step, i32 %threads, i64 %cap) {
entry:
  call void @tk_pool_count(i64 0, i64 1)
  %span = sub i64 %ub, %lb
  %empty = icmp sle i64 %span, 0
  br i1 %empty, label %return, label %count
count:
  %s1 = add i64 %span, %step
  %s2 = sub i64 %s1, 1
  %trips = sdiv i64 %s2, %step
  %default = icmp sle i32 %threads, 0
  br i1 %default, label %cores, label %sized
cores:
  %np = call i32 @get_nprocs()
  br label %sized
sized:
  %t = phi i32 [ %threads, %count ], [ %np, %cores ]
  %t64 = sext i32 %t to i64
  %n1 = call i64 @llvm.smin.i64(i64 %t64, i64 %cap)
  %n2 = call i64 @llvm.smin.i64(i64 %n1, i64 %trips)
  %n = call i64 @llvm.smin.i64(i64 %n2, i64 MAX_THREADS)
  %alone = icmp sle i64 %n, 1
  br i1 %alone, label %serial, label %trylock
trylock:
  %cx = cmpxchg ptr @tk_pool_lock, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %cx, 1
  br i1 %got, label %launch, label %serial
serial:
  call void %fn(ptr %data, i64 %lb, i64 %ub)
  br label %return
launch:
  call void @tk_pool_count(i64 1, i64 1)
  %helpers64 = sub i64 %n, 1
  %helpers = trunc i64 %helpers64 to i32
  call void @tk_pool_start_workers(i32 %helpers)
  ; pieces as even as can be (sizes differ by at most one, the longer first): 14 trips
  ; on 2 threads are 8 pieces of 2, 2, 2, 2, 2, 2, 1, 1 (7 each), not 7 of 2 (8 and 6)
  %want = mul i64 %n, PIECES_PER_THREAD
  %pieces = call i64 @llvm.smin.i64(i64 %want, i64 %trips)
  %piece = sdiv i64 %trips, %pieces
  %extra = srem i64 %trips, %pieces
  ; no piece of the old job may be taken from here on
  %w = load atomic i64, ptr @tk_pool_word monotonic, align 8
  %old = and i64 %w, -4294967296
  %locked = or i64 %old, 4294967295
  store atomic i64 %locked, ptr @tk_pool_word seq_cst, align 8
  store atomic ptr %fn, ptr @tk_pool_fn monotonic, align 8
  store atomic ptr %data, ptr @tk_pool_data monotonic, align 8
  store atomic i64 %lb, ptr @tk_pool_lb monotonic, align 8
  store atomic i64 %ub, ptr @tk_pool_ub monotonic, align 8
  store atomic i64 %step, ptr @tk_pool_step monotonic, align 8
  store atomic i64 %piece, ptr @tk_pool_piece monotonic, align 8
  store atomic i64 %extra, ptr @tk_pool_extra monotonic, align 8
  store atomic i64 %pieces, ptr @tk_pool_pieces monotonic, align 8
  store atomic i64 0, ptr @tk_pool_done monotonic, align 8
  store atomic i32 0, ptr @tk_pool_joined monotonic, align 4
  store atomic i32 %helpers, ptr @tk_pool_helpers monotonic, align 4
  %gen = add i64 %old, 4294967296
  store atomic i64 %gen, ptr @tk_pool_word seq_cst, align 8
  %sleeping = load atomic i32, ptr @tk_pool_sleepers seq_cst, align 4
  %some = icmp sgt i32 %sleeping, 0
  br i1 %some, label %wake, label %work
wake:
  %sq = atomicrmw add ptr @tk_pool_seq, i32 1 seq_cst
  %r = call i64 (i64, ...) @syscall(i64 FUTEX_SYSCALL, ptr @tk_pool_seq, i64 129, i64 %helpers64)
  call void @tk_pool_count(i64 3, i64 1)
  br label %work
work:
  call void @tk_pool_run_pieces(i64 %gen, i64 0)
  br label %join
join:
  %k = phi i64 [ 0, %work ], [ %k1, %spin ], [ 0, %yield ]
  %done = load atomic i64, ptr @tk_pool_done acquire, align 8
  %finished = icmp sge i64 %done, %pieces
  br i1 %finished, label %unlock, label %spin
spin:
  call void @tk_pool_pause()
  %k1 = add i64 %k, 1
  %long = icmp sge i64 %k1, SPINS_BEFORE_YIELD
  br i1 %long, label %yield, label %join
yield:
  %y = call i32 @sched_yield()
  br label %join
unlock:
  store atomic i32 0, ptr @tk_pool_lock release, align 4
  br label %return
return:
  ret void
}

define void @tk_pool_set_spin(i64 %ns) {
  store atomic i64 %ns, ptr @tk_pool_spin_ns monotonic, align 8
  ret void
}

define void @tk_pool_read_counters(ptr %out) {
  %a = load atomic i64, ptr @tk_pool_counters monotonic, align 8
  store i64 %a, ptr %out, align 8
  %p1 = getelementptr inbounds [4 x i64], ptr @tk_pool_counters, i64 0, i64 1
  %b = load atomic i64, ptr %p1 monotonic, align 8
  %o1 = getelementptr inbounds i64, ptr %out, i64 1
  store i64 %b, ptr %o1, align 8
  %p2 = getelementptr inbounds [4 x i64], ptr @tk_pool_counters, i64 0, i64 2
  %c = load atomic i64, ptr %p2 monotonic, align 8
  %o2 = getelementptr inbounds i64, ptr %out, i64 2
  store i64 %c, ptr %o2, align 8
  %p3 = getelementptr inbounds [4 x i64], ptr @tk_pool_counters, i64 0, i64 3
  %d = load atomic i64, ptr %p3 monotonic, align 8
  %o3 = getelementptr inbounds i64, ptr %out, i64 3
  store i64 %d, ptr %o3, align 8
  %s = load atomic i32, ptr @tk_pool_started monotonic, align 4
  %s64 = sext i32 %s to i64
  %o4 = getelementptr inbounds i64, ptr %out, i64 4
  store i64 %s64, ptr %o4, align 8
  ret void
}

define void @tk_pool_after_fork() {
  store atomic i32 0, ptr @tk_pool_started monotonic, align 4
  store atomic i32 0, ptr @tk_pool_sleepers monotonic, align 4
  store atomic i32 0, ptr @tk_pool_lock monotonic, align 4
  ret void
}
"""

#: the functions the pool defines for others (generated code calls the first)
POOL_FUNCTIONS = ("tk_parallel_for", "tk_pool_set_spin", "tk_pool_read_counters", "tk_pool_after_fork")
#: what ``tk_pool_read_counters`` writes, in order
COUNTERS = ("launches", "parallel_launches", "worker_pieces", "wakes", "workers")


def pool_ir(triple: str, hidden: bool = False) -> str:
    """The pool's LLVM IR for a target ``triple`` (``x86_64-unknown-linux-gnu``...);
    ``hidden``: its functions are not exported from a shared library linking it (each
    library then keeps its own pool).

    Raises ValueError for an architecture whose futex call is not known here."""
    arch = triple.split("-")[0]
    if arch not in _FUTEX_SYSCALL:
        raise ValueError(f"the thread pool does not know the futex system call on '{arch}' (triple {triple})")
    call, declaration = _PAUSE.get(arch, ("", ""))
    text = _TEMPLATE
    for name, value in (
        ("PAUSE_DECLARATION", declaration),
        ("PAUSE_CALL", call),
        ("FUTEX_SYSCALL", str(_FUTEX_SYSCALL[arch])),
        ("SPINS_PER_CLOCK_READ_MASK", str(SPINS_PER_CLOCK_READ - 1)),
        ("SPINS_BEFORE_YIELD", str(SPINS_BEFORE_YIELD)),
        ("PIECES_PER_THREAD", str(PIECES_PER_THREAD)),
        ("MAX_THREADS", str(MAX_THREADS)),
        ("DEFAULT_SPIN_NS", str(DEFAULT_SPIN_US * 1000)),
    ):
        text = text.replace(name, value)
    if hidden:
        text = text.replace("\ndefine void @", "\ndefine hidden void @")
    return f'target triple = "{triple}"\n' + text


__all__ = ["COUNTERS", "DEFAULT_SPIN_US", "MAX_THREADS", "PIECES_PER_THREAD", "POOL_FUNCTIONS", "pool_ir"]
