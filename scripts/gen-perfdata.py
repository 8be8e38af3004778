#!/usr/bin/env python3
"""Write a big synthetic perf.data file (perf's own file layout) for report benchmarks.

Usage:
    scripts/gen-perfdata.py N OUT [--seed S] [--callchain | --spread] [--python PATH]

    N            number of PERF_RECORD_SAMPLE records to write (e.g. 500000, 20000000)
    OUT          output path (file mode, PERFILE2; not pipe mode)
    --seed S     seed of the RNG (default 1): the same N/S/flags give the same file
    --callchain  add PERF_SAMPLE_CALLCHAIN (user-only chains of 4..24 frames, ending in
                 python3's main)
    --spread     samples spread over every address of ~1,500 functions of libpython
                 (global and local ones of a unique name, 32 bytes or more) instead of a pool of 65,536 IPs in
                 400 of them: each sample draws its function (Zipf-like, as below) and then
                 any byte of it but the first, so the distinct addresses grow with N (about
                 0.7M addresses in all) while the distinct (comm, dso, sym) rows stay ~1,500
    --python P   the python3 to take the binaries from (default: this interpreter)

What the file holds, as `perf record -e cpu-clock:u -F 4000` (per-CPU buffers) writes it:
  * header + attr section: one attr, PERF_TYPE_SOFTWARE / cpu-clock, freq 4000,
    sample_type IP|TID|TIME|CPU|PERIOD (+CALLCHAIN), read_format ID|LOST, the same flag bits
    perf 6.1 sets (exclude_kernel, sample_id_all, mmap2, comm_exec, ...), and two ids (one
    per CPU fd, as perf writes for one event on two CPUs);
  * data section: COMM (exec) "python3", MMAP2 records of the real python3 executable and
    the real libpython it links (load address, length and pgoff from their executable
    PT_LOAD headers, dev/inode from stat), FORK records for 3 more threads, then N samples
    (misc USER) whose IPs fall inside a few hundred real global functions of libpython's
    .text, with a Zipf-like weighting (long tail); 4 tids of one pid on 2 CPUs; period
    250000 ns. Samples are written in rounds of 2,000 as perf drains per-CPU ring buffers:
    CPU 0's 1,000 samples of the round window, then CPU 1's 1,000 of the same window (so
    times go backwards between the two blocks), each with timer jitter, then a
    PERF_RECORD_FINISHED_ROUND; every round's window is later than the previous one.
    EXIT records close the threads;
  * feature sections: BUILD_ID (real build-ids of both binaries), HOSTNAME, OSRELEASE,
    VERSION, ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE, EVENT_DESC, SAMPLE_TIME.

Size: 48 bytes per sample without callchains (20M samples ~ 0.96 GB); about 8 bytes more per
frame with --callchain. Written streaming in 4 MiB chunks: 20M samples take ~15 s here
(~30 s with --callchain).
Check a file with: perf report --stdio -i OUT | head; perf script -i OUT | head.
"""
import argparse
import bisect
import os
import platform
import random
import re
import struct
import subprocess
import sys

PAGE = 4096

# perf_event_attr (size 128, PERF_ATTR_SIZE_VER7 as perf 6.1 writes it)
ATTR_SIZE = 128
PERF_TYPE_SOFTWARE = 1
SW_CPU_CLOCK = 0
S_IP, S_TID, S_TIME, S_CALLCHAIN, S_CPU, S_PERIOD = 0x1, 0x2, 0x4, 0x20, 0x80, 0x100
READ_FORMAT = 0x4 | 0x10  # ID | LOST
# disabled inherit exclude_kernel exclude_hv mmap comm freq enable_on_exec task
# sample_id_all exclude_guest mmap2 comm_exec ksymbol bpf_event: what perf 6.1 sets for
# `-e cpu-clock:u` (checked against a real recording).
ATTR_FLAGS = sum(1 << b for b in (0, 1, 5, 6, 8, 9, 10, 12, 13, 18, 20, 23, 24, 29, 30))
FREQ = 4000
PERIOD = 1_000_000_000 // FREQ  # cpu-clock period in ns

# record types and misc bits
R_MMAP2, R_COMM, R_EXIT, R_FORK, R_SAMPLE = 10, 3, 4, 7, 9
R_FINISHED_ROUND = 68
MISC_USER = 2
MISC_COMM_EXEC = 1 << 13
MISC_BUILD_ID_SIZE = 1 << 15
PERF_CONTEXT_USER = (1 << 64) - 512

# feature bits (tools/perf/util/header.h)
F_BUILD_ID, F_HOSTNAME, F_OSRELEASE, F_VERSION, F_ARCH, F_NRCPUS = 2, 3, 4, 5, 6, 7
F_CPUDESC, F_CPUID, F_TOTAL_MEM, F_CMDLINE, F_EVENT_DESC, F_SAMPLE_TIME = 8, 9, 10, 11, 12, 21

HEADER_SIZE = 104
NR_CPUS = 2
SAMPLES_PER_ROUND = 2000
CHUNK = 4 << 20


def die(msg):
    sys.exit(f"gen-perfdata: {msg}")


def align(n, a):
    return (n + a - 1) // a * a


# ---------------------------------------------------------------- ELF facts (own parser)

def elf_info(path):
    """Executable PT_LOAD segments and the GNU build-id of a 64-bit little-endian ELF."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        die(f"{path}: not a 64-bit little-endian ELF")
    e_type = struct.unpack_from("<H", b, 16)[0]
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    loads, build_id = [], None
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", b, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:  # PT_LOAD, PF_X
            loads.append((p_offset, p_vaddr, p_memsz))
        elif p_type == 4:  # PT_NOTE
            pos, end = p_offset, p_offset + p_filesz
            while pos + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", b, pos)
                name = b[pos + 12:pos + 12 + namesz]
                desc_at = pos + 12 + align(namesz, 4)
                if ntype == 3 and name.rstrip(b"\0") == b"GNU":  # NT_GNU_BUILD_ID
                    build_id = b[desc_at:desc_at + descsz]
                pos = desc_at + align(descsz, 4)
    if not loads:
        die(f"{path}: no executable PT_LOAD segment")
    if build_id is None:
        die(f"{path}: no GNU build-id note")
    return e_type, loads, build_id


def functions(path, lo, hi, types="T", min_size=32):
    """Functions (nm types `types`, size >= min_size) inside [lo, hi) whose address has no
    other symbol name (so every symbolizer agrees on the name), sorted by address."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True)
    lines = out.stdout.splitlines()
    if not any(len(l.split()) == 4 for l in lines):
        out = subprocess.run(["nm", "-D", "-S", "--defined-only", path],
                             capture_output=True, text=True)
        lines = out.stdout.splitlines()
    names_at, funcs = {}, []
    for l in lines:
        f = l.split()
        if len(f) < 3:
            continue
        addr = int(f[0], 16)
        names_at.setdefault(addr, set()).add(f[-1].split("@")[0])
        if len(f) == 4 and f[2] in types and "." not in f[3]:
            size = int(f[1], 16)
            if size >= min_size and lo <= addr and addr + size <= hi:
                funcs.append((addr, size, f[3]))
    funcs = [fn for fn in funcs if len(names_at[fn[0]]) == 1]
    return sorted(set(funcs))


def find_binaries(python):
    exe = os.path.realpath(python)
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    m = re.search(r"=>\s*(\S*libpython[^ ]*\.so[^ ]*)\s", ldd)
    if not m:
        die(f"{exe} does not link a libpython*.so (ldd: {ldd.strip()})")
    return exe, m.group(1)


# ---------------------------------------------------------------- records

ST_HDR = struct.Struct("<IHH")
ST_TRAILER = struct.Struct("<IIQII")  # sample_id_all: pid, tid, time, cpu, res


def comm_exec(pid, tid, comm, t, cpu):
    name = comm.encode() + b"\0"
    name += b"\0" * (align(len(name), 8) - len(name))
    size = 8 + 8 + len(name) + ST_TRAILER.size
    return (ST_HDR.pack(R_COMM, MISC_COMM_EXEC, size) + struct.pack("<II", pid, tid) + name
            + ST_TRAILER.pack(pid, tid, t, cpu, 0))


def mmap2(pid, tid, addr, length, pgoff, st, path, t, cpu):
    name = path.encode() + b"\0"
    name += b"\0" * (align(len(name), 8) - len(name))
    body = struct.pack("<IIQQQIIQQII", pid, tid, addr, length, pgoff,
                       os.major(st.st_dev), os.minor(st.st_dev), st.st_ino, 0,
                       5, 2)  # PROT_READ|PROT_EXEC, MAP_PRIVATE
    size = 8 + len(body) + len(name) + ST_TRAILER.size
    return ST_HDR.pack(R_MMAP2, MISC_USER, size) + body + name + ST_TRAILER.pack(
        pid, tid, t, cpu, 0)


def task(kind, pid, ppid, tid, ptid, t, cpu):
    size = 8 + 24 + ST_TRAILER.size
    return (ST_HDR.pack(kind, 0, size) + struct.pack("<IIIIQ", pid, ppid, tid, ptid, t)
            + ST_TRAILER.pack(pid, tid, t, cpu, 0))


FINISHED_ROUND = ST_HDR.pack(R_FINISHED_ROUND, 0, 8)


# ---------------------------------------------------------------- feature sections

def fstring(s):
    b = s.encode() + b"\0"
    n = align(len(b), 64)
    return struct.pack("<I", n) + b + b"\0" * (n - len(b))


def build_id_entry(build_id, path):
    name = path.encode() + b"\0"
    name += b"\0" * (align(len(name), 64) - len(name))
    bid = build_id[:20].ljust(20, b"\0") + bytes([len(build_id)]) + b"\0\0\0"
    size = 8 + 4 + 24 + len(name)
    return ST_HDR.pack(0, MISC_USER | MISC_BUILD_ID_SIZE, size) + struct.pack("<i", -1) + bid + name


def cpu_facts():
    desc, vendor, fam, model, step = "unknown", "unknown", "0", "0", "0"
    try:
        for l in open("/proc/cpuinfo"):
            k, _, v = l.partition(":")
            k, v = k.strip(), v.strip()
            if k == "model name":
                desc = v
            elif k == "vendor_id":
                vendor = v
            elif k == "cpu family":
                fam = v
            elif k == "model":
                model = v
            elif k == "stepping":
                step = v
            elif not l.strip():
                break
    except OSError:
        pass
    mem = 0
    try:
        for l in open("/proc/meminfo"):
            if l.startswith("MemTotal:"):
                mem = int(l.split()[1])
    except OSError:
        pass
    return desc, f"{vendor},{fam},{model},{step}", mem


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--callchain", action="store_true")
    ap.add_argument("--spread", action="store_true")
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    if a.n < 0:
        die("N must be >= 0")
    if a.spread and a.callchain:
        die("--spread and --callchain do not go together")
    rng = random.Random(a.seed)

    exe, lib = find_binaries(a.python)
    exe_type, exe_loads, exe_bid = elf_info(exe)
    lib_type, lib_loads, lib_bid = elf_info(lib)
    if lib_type != 3:
        die(f"{lib}: not a shared object")
    exe_base = 0x55D0_0000_0000 if exe_type == 3 else 0  # PIE or ET_EXEC
    lib_base = 0x7F3C_1200_0000

    def maps(base, loads):
        out = []
        for off, vaddr, memsz in loads:
            start = vaddr & ~(PAGE - 1)
            out.append((base + start, align(vaddr + memsz, PAGE) - start, off & ~(PAGE - 1),
                        vaddr, vaddr + memsz))
        return out

    exe_maps, lib_maps = maps(exe_base, exe_loads), maps(lib_base, lib_loads)
    text = max(lib_maps, key=lambda m: m[1])  # libpython's text segment
    funcs = functions(lib, text[3], text[4], "Tt" if a.spread else "T")
    if a.spread:  # local functions: only names met once (perf keeps namesakes apart)
        times = {}
        for f in funcs:
            times[f[2]] = times.get(f[2], 0) + 1
        funcs = [f for f in funcs if times[f[2]] == 1]
    if len(funcs) < 50:
        die(f"{lib}: only {len(funcs)} usable function symbols")
    picked = rng.sample(funcs, min(1500 if a.spread else 400, len(funcs)))
    # Zipf-like weights, s = 1.1: the top function has ~20%, a long tail of rare ones.
    weights = [1.0 / (r + 1) ** 1.1 for r in range(len(picked))]
    cum, acc = [], 0.0
    for w in weights:
        acc += w
        cum.append(acc)

    def pick_fn():
        return picked[bisect.bisect_left(cum, rng.random() * acc)]

    def ip_in(fn, base=lib_base):
        addr, size, _ = fn
        return base + addr + rng.randrange(1, size)

    # A pool of leaf IPs (or of packed callchains) drawn once; samples pick from it uniformly.
    POOL = 1 << 16
    chains = None
    if a.callchain:
        exe_funcs = functions(exe, exe_maps[0][3], exe_maps[0][4], "Tt", 2)
        by_name = {f[2]: f for f in funcs}
        roots = [by_name[n] for n in ("Py_BytesMain", "Py_RunMain", "_PyRun_SimpleFileObject",
                                      "PyEval_EvalCode") if n in by_name]
        frames = picked[:60]
        main_fn = [f for f in exe_funcs if f[2] == "main"]
        POOL = 1 << 14
        chains = []
        for _ in range(POOL):
            leaf = pick_fn()
            mids = [frames[min(int(rng.expovariate(0.15)), len(frames) - 1)]
                    for _ in range(rng.randrange(0, 18))]
            ips = [ip_in(leaf)] + [ip_in(f) for f in mids] + [ip_in(f) for f in reversed(roots)]
            if main_fn:
                ips.append(ip_in(main_fn[0], exe_base))
            ips = ips[:24]
            nr = len(ips) + 1
            chains.append((ips[0], struct.pack(f"<Q{nr}Q", nr, PERF_CONTEXT_USER, *ips)))
        pool = None
    elif not a.spread:
        pool = [ip_in(pick_fn()) for _ in range(POOL)]
    else:
        pool = None
        starts = [lib_base + f[0] + 1 for f in picked]
        spans = [f[1] - 1 for f in picked]
        bisect_left = bisect.bisect_left

    pid = 31337
    tids = [pid, pid + 1, pid + 2, pid + 3]
    sample_type = S_IP | S_TID | S_TIME | S_CPU | S_PERIOD | (S_CALLCHAIN if a.callchain else 0)
    attr = bytearray(ATTR_SIZE)
    struct.pack_into("<IIQQQQQ", attr, 0, PERF_TYPE_SOFTWARE, ATTR_SIZE, SW_CPU_CLOCK, FREQ,
                     sample_type, READ_FORMAT, ATTR_FLAGS)
    ids = [1001, 1002]
    ids_bytes = struct.pack(f"<{len(ids)}Q", *ids)
    ids_off = HEADER_SIZE
    attrs_off = ids_off + len(ids_bytes)
    attr_entry = bytes(attr) + struct.pack("<QQ", ids_off, len(ids_bytes))
    data_off = attrs_off + len(attr_entry)

    out = open(a.out, "wb")
    out.write(b"\0" * data_off)  # header, ids and attr are written at the end
    written = 0

    def emit(b):
        nonlocal written
        out.write(b)
        written += len(b)

    # --- setup records: exec, mappings, thread creation (all before the first sample)
    t = 1_000_000_000_000  # 1000 s after boot
    setup = [comm_exec(pid, pid, "python3", t, 0)]
    for path, ms in ((exe, exe_maps), (lib, lib_maps)):
        st = os.stat(path)
        for addr, length, pgoff, _, _ in ms:
            t += 15_000
            setup.append(mmap2(pid, pid, addr, length, pgoff, st, path, t, 0))
    for tid in tids[1:]:
        t += 40_000
        setup.append(task(R_FORK, pid, pid, tid, pid, t, 0))
    emit(b"".join(setup))
    t += 100_000

    # --- samples, in rounds
    window = SAMPLES_PER_ROUND // NR_CPUS * PERIOD
    first_time = last_time = None
    buf = bytearray(CHUNK + (1 << 16))
    pos = 0
    hdr_plain = struct.Struct("<IHHQIIQIIQ")  # header, ip, pid, tid, time, cpu, res, period
    fixed = struct.Struct("<IHHQIIQII")  # with callchain: same up to cpu; then period
    per = struct.Struct("<Q")
    rnd = rng.random
    done, slice_no = 0, 0
    jitter = PERIOD // 10
    while done < a.n:
        in_round = min(SAMPLES_PER_ROUND, a.n - done)
        track = done == 0 or done + in_round >= a.n  # first/last sample times
        for cpu in range(NR_CPUS):
            k = in_round // NR_CPUS + (1 if cpu < in_round % NR_CPUS else 0)
            phase = cpu * PERIOD // 3
            for i in range(k):
                ts = t + phase + i * PERIOD + int((rnd() - 0.5) * jitter)
                # Each CPU runs one thread for 50 ticks; the two CPUs never run the same one.
                tid = tids[((i // 50) + slice_no + 2 * cpu) % 4]
                if pool is None and chains is None:  # --spread: any byte of the function
                    j = bisect_left(cum, rnd() * acc)
                    ip = starts[j] + int(rnd() * spans[j])
                    hdr_plain.pack_into(buf, pos, R_SAMPLE, MISC_USER, 48, ip, pid, tid, ts,
                                        cpu, 0, PERIOD)
                    pos += 48
                elif chains is None:
                    ip = pool[int(rnd() * POOL)]
                    hdr_plain.pack_into(buf, pos, R_SAMPLE, MISC_USER, 48, ip, pid, tid, ts,
                                        cpu, 0, PERIOD)
                    pos += 48
                else:
                    ip, cc = chains[int(rnd() * POOL)]
                    size = 48 + len(cc)
                    fixed.pack_into(buf, pos, R_SAMPLE, MISC_USER, size, ip, pid, tid, ts, cpu, 0)
                    pos += 40
                    per.pack_into(buf, pos, PERIOD)
                    pos += 8
                    buf[pos:pos + len(cc)] = cc
                    pos += len(cc)
                if track:
                    first_time = ts if first_time is None else min(first_time, ts)
                    last_time = ts if last_time is None else max(last_time, ts)
                if pos >= CHUNK:
                    emit(memoryview(buf)[:pos])
                    pos = 0
        buf[pos:pos + 8] = FINISHED_ROUND
        pos += 8
        done += in_round
        slice_no += 1
        t += window + PERIOD
    emit(memoryview(buf)[:pos])

    # --- the threads exit
    tail = b""
    for tid in reversed(tids):
        t += 30_000
        tail += task(R_EXIT, pid, pid if tid != pid else 1, tid, pid if tid != pid else 1, t,
                     0)
    emit(tail + FINISHED_ROUND)
    data_size = written
    if first_time is None:
        first_time = last_time = 0

    # --- feature sections
    desc, cpuid, mem = cpu_facts()
    u = os.uname()
    cmd = [os.path.basename(sys.argv[0])] + sys.argv[1:]
    ev_desc = (struct.pack("<II", 1, ATTR_SIZE) + bytes(attr) + struct.pack("<I", len(ids))
               + fstring("cpu-clock:u") + ids_bytes)
    feats = {
        F_BUILD_ID: build_id_entry(exe_bid, exe) + build_id_entry(lib_bid, lib),
        F_HOSTNAME: fstring(u.nodename),
        F_OSRELEASE: fstring(u.release),
        F_VERSION: fstring("gen-perfdata.py (synthetic)"),
        F_ARCH: fstring(platform.machine()),
        F_NRCPUS: struct.pack("<II", NR_CPUS, NR_CPUS),
        F_CPUDESC: fstring(desc),
        F_CPUID: fstring(cpuid),
        F_TOTAL_MEM: struct.pack("<Q", mem),
        F_CMDLINE: struct.pack("<I", len(cmd)) + b"".join(fstring(c) for c in cmd),
        F_EVENT_DESC: ev_desc,
        F_SAMPLE_TIME: struct.pack("<QQ", first_time, last_time),
    }
    feat_off = data_off + data_size
    order = sorted(feats)
    index, body = b"", b""
    at = feat_off + 16 * len(order)
    for f in order:
        index += struct.pack("<QQ", at + len(body), len(feats[f]))
        body += feats[f]
    out.write(index + body)

    bitmap = 0
    for f in order:
        bitmap |= 1 << f
    header = (b"PERFILE2" + struct.pack("<QQ", HEADER_SIZE, len(attr_entry))
              + struct.pack("<QQ", attrs_off, len(attr_entry))
              + struct.pack("<QQ", data_off, data_size)
              + struct.pack("<QQ", 0, 0)
              + bitmap.to_bytes(32, "little"))
    assert len(header) == HEADER_SIZE
    out.seek(0)
    out.write(header + ids_bytes + attr_entry)
    out.close()
    print(f"gen-perfdata: {a.out}: {a.n} samples, {len(picked)} functions of {lib}, "
          f"{data_size / 1e6:.1f} MB of records", file=sys.stderr)


if __name__ == "__main__":
    main()
