//! `hrec c2c report`: cache lines shared between cores (perf c2c's "Shared Data Cache Line
//! Table" and its per-offset "Pareto" breakdown), from a profile of `c2c record`'s load and
//! store samples folded by CPU, thread, code address, data address, data source and weight.
//!
//! Each sample is classified from its `perf_mem_data_src` as the kernel lays it out:
//!
//! * **Loads** (`mem_op` LOAD): a snoop `HITM` is a load that found the line modified in
//!   another core's cache, *remote* when `mem_remote` is set or the level is a remote cache
//!   (`REM_CCE1`/`REM_CCE2`), else local. Otherwise, by level: the fill buffer, L1, L2, the
//!   LLC (local hit; a snoop `HIT` with `mem_remote` is a remote cache hit) and DRAM (local
//!   or remote by `mem_remote` / `REM_RAM1`/`REM_RAM2`); `mem_lvl_num` is read when the old
//!   level bits say nothing. Each load is counted in exactly one class: a remote HITM is not
//!   also a remote DRAM load (perf 6.1 counts both when the level says RAM).
//!   A level bit counts where the load hit: with `MISS` it is only a load that missed
//!   (`Loads - Miss`). Besides its class a load may be uncacheable or I/O (level `UNC`, `IO`
//!   with `HIT`), locked (`mem_lock`), blocked (`mem_blk` DATA, ADDR), served by a peer cache
//!   (`mem_snoopx` PEER: local at L2 or the LLC, remote from another socket's cache), and a
//!   DRAM load is in MESI state shared when the snoop says `HIT`, else exclusive. A load or
//!   store without a data address is counted only as such (perf's "no mapping" lines).
//! * **Stores** (`mem_op` STORE): an L1 hit, an L1 miss, or no level (`N/A`); uncacheable
//!   (`UNC` with `HIT`). An access that is neither a load nor a store is one perf cannot
//!   parse.
//!
//! A cache line is the 64-byte line of the data address (`addr & !63`) in its process's
//! address space. Which loads count is perf's `-d/--display` ([`Display`]): HITMs `tot` (local
//! and remote, perf 6.1's default on x86), `lcl` or `rmt`, or `peer` loads (local and remote,
//! Arm SPE's default). A line is *shared* when it has a HITM of either kind or a peer hit (the
//! Global Shared Cache Line totals); it is *shown* when its displayed loads are at least 0.1%
//! of those of all shared lines (perf's `DISPLAY_LINE_LIMIT`), or, with `--show-all`, whenever
//! it has a sample, the most displayed loads first.
//! Each line's rows are its samples grouped by offset and by what `-c` lists ([`Coalesce`]:
//! the code address by default, the process, the thread, the code's object); a row is shown
//! when it has a store or a displayed HITM (perf's `is_valid_hist_entry`), rows by offset, then
//! by the displayed HITMs (`rmt` then `lcl` for `-d rmt`, the other way for `-d lcl`), most
//! first. Latencies are the samples' weights (the load latency in cycles), averaged per class
//! (remote HITM, local HITM, remote peer, local peer, other loads: each load in one);
//! each row also keeps its counts per NUMA node of the CPUs it ran on (`-N`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::memkeys::CACHE_LINE;
use super::profile::{NONE, Profile};
use crate::decode::datasrc::{DataSrc, blk, lock, lvl, lvlnum, op, snoop, snoopx};

/// Per-class counts of a line or an offset, and the summed latencies behind the averages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct C2cStats {
    /// Load and store samples.
    pub records: u64,
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Loads that hit a line modified in a core of this socket.
    pub lcl_hitm: u64,
    /// Loads that hit a line modified in a core of another socket.
    pub rmt_hitm: u64,
    /// Loads served by the LLC of this socket (no HITM).
    pub lcl_hit: u64,
    /// Loads served by another socket's cache (no HITM).
    pub rmt_hit: u64,
    /// Loads from local DRAM.
    pub lcl_dram: u64,
    /// Loads from remote DRAM.
    pub rmt_dram: u64,
    /// Loads that hit the fill buffer.
    pub ld_fbhit: u64,
    /// Loads that hit L1.
    pub ld_l1hit: u64,
    /// Loads that hit L2.
    pub ld_l2hit: u64,
    /// Stores that hit L1.
    pub st_l1hit: u64,
    /// Stores that missed L1.
    pub st_l1miss: u64,
    /// Stores with no level.
    pub st_na: u64,
    /// Locked loads and stores (`mem_lock` LOCKED).
    pub locks: u64,
    /// Loads blocked by data that could not be forwarded (`mem_blk` DATA).
    pub blk_data: u64,
    /// Loads blocked by an address conflict (`mem_blk` ADDR).
    pub blk_addr: u64,
    /// Uncacheable loads (level `UNC` with `HIT`).
    pub ld_uncache: u64,
    /// I/O loads (level `IO` with `HIT`).
    pub ld_io: u64,
    /// Loads whose level says `MISS`.
    pub ld_miss: u64,
    /// Loads without a data address (counted in no other load class).
    pub ld_noadrs: u64,
    /// DRAM loads the snoop found in no other cache (MESI state exclusive).
    pub ld_excl: u64,
    /// DRAM loads the snoop found in another cache too (`HIT`: MESI state shared).
    pub ld_shared: u64,
    /// Loads served by a peer cache of this socket (`mem_snoopx` PEER at L2 or the LLC).
    pub lcl_peer: u64,
    /// Loads served by a peer cache of another socket (`mem_snoopx` PEER, remote).
    pub rmt_peer: u64,
    /// Uncacheable stores.
    pub st_uncache: u64,
    /// Stores without a data address.
    pub st_noadrs: u64,
    /// Samples whose data source is neither a load nor a store.
    pub noparse: u64,
    /// Summed latency of the local HITM loads.
    pub lcl_hitm_cycles: u64,
    /// Summed latency of the remote HITM loads.
    pub rmt_hitm_cycles: u64,
    /// Summed latency of the local peer loads.
    pub lcl_peer_cycles: u64,
    /// Summed latency of the remote peer loads.
    pub rmt_peer_cycles: u64,
    /// Summed latency of the other loads (neither HITM nor peer).
    pub load_cycles: u64,
}

impl C2cStats {
    /// HITM loads, local and remote.
    pub fn hitm(&self) -> u64 {
        self.lcl_hitm + self.rmt_hitm
    }

    /// Peer loads, local and remote.
    pub fn peer(&self) -> u64 {
        self.lcl_peer + self.rmt_peer
    }

    /// Adds `n` samples of one access with data source `src`, weight `w` and a data address.
    pub fn add(&mut self, src: DataSrc, w: u64, n: u64) {
        self.add_access(src, w, n, true);
    }

    /// [`C2cStats::add`] for an access that may have no data address (`has_addr`): one
    /// without is counted as a load or store without an address and in no level class, as
    /// perf counts it.
    pub fn add_access(&mut self, src: DataSrc, w: u64, n: u64, has_addr: bool) {
        self.records += n;
        let level = src.lvl();
        let num = src.lvl_num();
        let remote_cache = level & (lvl::REM_CCE1 | lvl::REM_CCE2) != 0;
        let remote_ram = level & (lvl::REM_RAM1 | lvl::REM_RAM2) != 0;
        if src.lock() & lock::LOCKED != 0 {
            self.locks += n;
        }
        if src.blk() & blk::DATA != 0 {
            self.blk_data += n;
        }
        if src.blk() & blk::ADDR != 0 {
            self.blk_addr += n;
        }
        let hit = level & lvl::HIT != 0;
        if src.op() & op::STORE != 0 {
            self.stores += n;
            if !has_addr {
                self.st_noadrs += n;
                return;
            }
            if hit && level & lvl::UNC != 0 {
                self.st_uncache += n;
            }
            let l1 = level & lvl::L1 != 0
                || (level & !(lvl::NA | lvl::HIT | lvl::MISS) == 0 && num == lvlnum::L1);
            if l1 && level & lvl::MISS != 0 {
                self.st_l1miss += n;
            } else if l1 {
                self.st_l1hit += n;
            } else if level & lvl::NA != 0 || level == 0 {
                self.st_na += n;
            }
            return;
        }
        if src.op() & op::LOAD == 0 {
            self.noparse += n;
            return;
        }
        self.loads += n;
        if !has_addr {
            self.ld_noadrs += n;
            return;
        }
        if hit && level & lvl::UNC != 0 {
            self.ld_uncache += n;
        }
        if hit && level & lvl::IO != 0 {
            self.ld_io += n;
        }
        if level & lvl::MISS != 0 {
            self.ld_miss += n;
        }
        let remote = src.remote() || remote_cache || remote_ram;
        if src.snoop() & snoop::HITM != 0 {
            if remote {
                self.rmt_hitm += n;
                self.rmt_hitm_cycles += w * n;
            } else {
                self.lcl_hitm += n;
                self.lcl_hitm_cycles += w * n;
            }
            return;
        }
        // The latency goes to the peer class the load counts in, else to the loads' (perf's
        // `compute_stats`).
        match self.classify_load(src, n) {
            Some(true) => self.rmt_peer_cycles += w * n,
            Some(false) => self.lcl_peer_cycles += w * n,
            None => self.load_cycles += w * n,
        }
    }

    /// Counts `n` non-HITM loads with an address in their level class; `Some(remote)` when
    /// they count as peer loads.
    fn classify_load(&mut self, src: DataSrc, n: u64) -> Option<bool> {
        let level = src.lvl();
        let num = src.lvl_num();
        let remote_cache = level & (lvl::REM_CCE1 | lvl::REM_CCE2) != 0;
        let remote_ram = level & (lvl::REM_RAM1 | lvl::REM_RAM2) != 0;
        let remote = src.remote() || remote_cache || remote_ram;
        let peer = src.snoopx() & snoopx::PEER != 0;
        let shared = src.snoop() & snoop::HIT != 0;
        // A level bit names where a load hit (not one it missed); a level given only by
        // its number (the old bits say nothing) is where it hit.
        let is = |bit: u64, number: u64| {
            (level & bit != 0 && level & lvl::MISS == 0)
                || (level & !(lvl::NA | lvl::HIT | lvl::MISS) == 0 && num == number)
        };
        let mesi = |s: &mut C2cStats| {
            if shared {
                s.ld_shared += n;
            } else {
                s.ld_excl += n;
            }
        };
        if is(lvl::LFB, lvlnum::LFB) {
            self.ld_fbhit += n;
        } else if is(lvl::L1, lvlnum::L1) {
            self.ld_l1hit += n;
        } else if is(lvl::L2, lvlnum::L2) {
            self.ld_l2hit += n;
            if peer {
                self.lcl_peer += n;
                return Some(false);
            }
        } else if is(lvl::L3, lvlnum::L3) && !remote {
            self.lcl_hit += n;
            if peer {
                self.lcl_peer += n;
                return Some(false);
            }
        } else if remote_ram || (num == lvlnum::RAM && src.remote()) {
            self.rmt_dram += n;
            mesi(self);
        } else if is(lvl::LOC_RAM, lvlnum::RAM) {
            self.lcl_dram += n;
            mesi(self);
        } else if remote {
            self.rmt_hit += n;
            if peer {
                self.rmt_peer += n;
                return Some(true);
            }
        }
        None
    }

    /// Loads served from beyond this socket's LLC: DRAM, local or remote, and another
    /// socket's cache, with or without HITM (perf's `llc_misses`).
    pub fn llc_misses(&self) -> u64 {
        self.lcl_dram + self.rmt_dram + self.rmt_hit + self.rmt_hitm
    }

    fn merge(&mut self, o: &C2cStats) {
        self.records += o.records;
        self.loads += o.loads;
        self.stores += o.stores;
        self.lcl_hitm += o.lcl_hitm;
        self.rmt_hitm += o.rmt_hitm;
        self.lcl_hit += o.lcl_hit;
        self.rmt_hit += o.rmt_hit;
        self.lcl_dram += o.lcl_dram;
        self.rmt_dram += o.rmt_dram;
        self.ld_fbhit += o.ld_fbhit;
        self.ld_l1hit += o.ld_l1hit;
        self.ld_l2hit += o.ld_l2hit;
        self.st_l1hit += o.st_l1hit;
        self.st_l1miss += o.st_l1miss;
        self.st_na += o.st_na;
        self.locks += o.locks;
        self.blk_data += o.blk_data;
        self.blk_addr += o.blk_addr;
        self.ld_uncache += o.ld_uncache;
        self.ld_io += o.ld_io;
        self.ld_miss += o.ld_miss;
        self.ld_noadrs += o.ld_noadrs;
        self.ld_excl += o.ld_excl;
        self.ld_shared += o.ld_shared;
        self.lcl_peer += o.lcl_peer;
        self.rmt_peer += o.rmt_peer;
        self.st_uncache += o.st_uncache;
        self.st_noadrs += o.st_noadrs;
        self.noparse += o.noparse;
        self.lcl_hitm_cycles += o.lcl_hitm_cycles;
        self.rmt_hitm_cycles += o.rmt_hitm_cycles;
        self.lcl_peer_cycles += o.lcl_peer_cycles;
        self.rmt_peer_cycles += o.rmt_peer_cycles;
        self.load_cycles += o.load_cycles;
    }
}

/// What a line's rows are told apart by besides the offset (perf c2c report's
/// `-c/--coalesce`; perf's default is `iaddr`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coalesce {
    /// Per process.
    pub pid: bool,
    /// Per thread.
    pub tid: bool,
    /// Per code address (shown with its function, object and source line).
    pub iaddr: bool,
    /// Per object of the code.
    pub dso: bool,
}

impl Coalesce {
    /// perf's default grouping: offset and code address.
    pub const DEFAULT: Coalesce = Coalesce {
        pid: false,
        tid: false,
        iaddr: true,
        dso: false,
    };

    /// The grouping as perf's c2c details print it (`offset,pid,tid,iaddr`).
    pub fn names(&self) -> String {
        let mut s = String::from("offset");
        for (on, name) in [
            (self.pid, "pid"),
            (self.tid, "tid"),
            (self.iaddr, "iaddr"),
            (self.dso, "dso"),
        ] {
            if on {
                s.push(',');
                s.push_str(name);
            }
        }
        s
    }
}

/// Which HITMs sort and filter the lines and rows (perf c2c report's `-d/--display`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Display {
    /// Local and remote HITMs (perf 6.1's default on x86).
    #[default]
    Tot,
    /// Local HITMs.
    Lcl,
    /// Remote HITMs.
    Rmt,
    /// Loads served by a peer cache, local and remote (perf's `peer`, Arm SPE's default).
    Peer,
}

impl Display {
    /// The loads of `s` this display counts: HITMs, or peer loads for `peer`.
    pub fn hitm(self, s: &C2cStats) -> u64 {
        match self {
            Display::Tot => s.hitm(),
            Display::Lcl => s.lcl_hitm,
            Display::Rmt => s.rmt_hitm,
            Display::Peer => s.peer(),
        }
    }

    /// The keys rows of one offset are ordered by, most first (perf's `cl_resort`).
    fn row_keys(self, s: &C2cStats) -> (u64, u64) {
        match self {
            Display::Tot => (s.hitm(), 0),
            Display::Lcl => (s.lcl_hitm, s.rmt_hitm),
            Display::Rmt => (s.rmt_hitm, s.lcl_hitm),
            Display::Peer => (s.peer(), 0),
        }
    }
}

/// perf's `DISPLAY_LINE_LIMIT`: a line is shown when it has at least this share of the
/// displayed HITMs of all shared lines.
pub const DISPLAY_LINE_LIMIT: f64 = 0.001;

/// A row's samples that ran on the CPUs of one NUMA node.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct C2cNode {
    /// Those CPUs.
    pub cpus: BTreeSet<u32>,
    /// Their counts.
    pub stats: C2cStats,
}

/// One row of a cache line: an offset and what [`Coalesce`] groups by.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct C2cOffset {
    /// Offset of the data address in the line.
    pub offset: u64,
    /// The code address (the sampled instruction), when rows are per code address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iaddr: Option<u64>,
    /// Its function as perf prints it (`[.] reader`), or the address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The code's shared object, when rows are per code address or per object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dso: Option<String>,
    /// Its source line (`file:line`, `??:0` unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srcline: Option<String>,
    /// The process, when rows are per process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The thread and its name, when rows are per thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<(u32, String)>,
    /// Counts and latencies.
    pub stats: C2cStats,
    /// CPUs the samples ran on.
    pub cpus: BTreeSet<u32>,
    /// NUMA nodes of those CPUs (empty when the recording has no NUMA topology).
    pub nodes: BTreeSet<u32>,
    /// Per NUMA node: its CPUs the samples ran on and their counts (`-N`).
    pub per_node: BTreeMap<u32, C2cNode>,
    /// Threads that loaded from it, as (pid, tid).
    pub readers: BTreeSet<(u32, u32)>,
    /// Threads that stored to it, as (pid, tid).
    pub writers: BTreeSet<(u32, u32)>,
}

/// One cache line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct C2cLine {
    /// The line's address (its first byte).
    pub addr: u64,
    /// The data symbol of the line's first sampled address, as `symbol_daddr` names it.
    pub symbol: String,
    /// The data object (`dso_daddr`).
    pub dso: String,
    /// Counts over the line.
    pub stats: C2cStats,
    /// Its rows, by offset then code address.
    pub offsets: Vec<C2cOffset>,
}

/// The shared cache lines of a profile and the totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct C2c {
    /// The HITMs that sort and filter the lines.
    pub display: Display,
    /// The lines shown (see the module doc), the most displayed HITMs first.
    pub lines: Vec<C2cLine>,
    /// Counts over every sample with a data source.
    pub total: C2cStats,
    /// Lines with a HITM of either kind or a peer hit.
    pub shared_lines: u64,
    /// Counts over those lines.
    pub shared: C2cStats,
    /// Samples without a data address (not placed in a line).
    pub no_address: u64,
    /// Samples whose data address lies in no mapping (perf's "No Page Map Rejects").
    pub no_map: u64,
    /// The recording's NUMA nodes (empty without a NUMA topology).
    pub nodes: Vec<u32>,
}

/// Builds the cache-line tables of `p` (folded with CPU, thread, per-address locations and
/// the data address, data source and weight kept; the thread's name too for `by.tid`).
/// `nodes` are the recording's NUMA nodes and `node_of` gives a CPU's.
pub fn build(
    p: &Profile,
    by: Coalesce,
    display: Display,
    show_all: bool,
    nodes: &[u32],
    node_of: &dyn Fn(u32) -> Option<u32>,
) -> C2c {
    type Key = (u32, u64);
    let mut lines: BTreeMap<Key, C2cLine> = BTreeMap::new();
    type RowKey = (
        Key,
        u64,
        Option<u64>,
        Option<u32>,
        Option<u32>,
        Option<String>,
    );
    let mut rows: BTreeMap<RowKey, C2cOffset> = BTreeMap::new();
    let mut c = C2c {
        display,
        nodes: nodes.to_vec(),
        ..C2c::default()
    };
    for g in &p.groups {
        let Some(m) = p.mems.get(g.mem as usize).filter(|_| g.mem != NONE) else {
            c.no_address += g.samples;
            continue;
        };
        let src = DataSrc(m.data_src);
        let has_addr = m.daddr != NONE && m.addr != 0;
        c.total.add_access(src, m.weight, g.samples, has_addr);
        if !has_addr {
            c.no_address += g.samples;
            continue;
        }
        let d = p.data_locs.get(m.daddr as usize);
        if d.is_none_or(|d| d.unmapped) {
            c.no_map += g.samples;
        }
        // Lines of anonymous or unmapped memory are per process; file-backed ones too, as
        // perf keys them by the process's address space unless the mapping is shared.
        let line = m.addr & !(CACHE_LINE - 1);
        let key = (g.pid, line);
        let level = if m.kernel { 'k' } else { '.' };
        let l = lines.entry(key).or_insert_with(|| C2cLine {
            addr: line,
            symbol: d.map_or_else(|| "[unknown]".into(), |d| d.cell(level)),
            dso: d.map_or_else(|| "[unknown]".into(), |d| d.dso.to_string()),
            stats: C2cStats::default(),
            offsets: Vec::new(),
        });
        l.stats.add(src, m.weight, g.samples);
        let loc = p.locs.get(g.leaf as usize);
        let code_dso = loc.map_or_else(String::new, |l| l.dso.to_string());
        let iaddr = by.iaddr.then(|| loc.map_or(0, |l| l.addr));
        let pid = by.pid.then_some(g.pid);
        let tid = by.tid.then_some(g.tid);
        let dso_key = (by.dso && !by.iaddr).then(|| code_dso.clone());
        let row = rows
            .entry((key, m.addr - line, iaddr, pid, tid, dso_key))
            .or_insert_with(|| C2cOffset {
                offset: m.addr - line,
                iaddr,
                symbol: by.iaddr.then(|| {
                    loc.map_or_else(String::new, |l| match &l.sym {
                        Some(s) => format!("[{}] {s}", if l.kernel { 'k' } else { '.' }),
                        None => {
                            format!("[{}] {:#x}", if l.kernel { 'k' } else { '.' }, l.rel_addr)
                        }
                    })
                }),
                dso: (by.iaddr || by.dso).then_some(code_dso),
                srcline: by.iaddr.then(|| {
                    loc.and_then(|l| l.frames.first())
                        .and_then(|f| f.file.as_ref().map(|file| format!("{file}:{}", f.line)))
                        .unwrap_or_else(|| "??:0".into())
                }),
                pid,
                tid: tid.map(|t| {
                    let comm = p.comms.get(g.comm as usize).map_or("", |c| &**c);
                    (t, comm.to_string())
                }),
                stats: C2cStats::default(),
                cpus: BTreeSet::new(),
                nodes: BTreeSet::new(),
                per_node: BTreeMap::new(),
                readers: BTreeSet::new(),
                writers: BTreeSet::new(),
            });
        row.stats.add(src, m.weight, g.samples);
        if g.cpu != NONE {
            row.cpus.insert(g.cpu);
            if let Some(n) = node_of(g.cpu) {
                row.nodes.insert(n);
                let at = row.per_node.entry(n).or_default();
                at.cpus.insert(g.cpu);
                at.stats.add(src, m.weight, g.samples);
            }
        }
        if src.op() & op::STORE != 0 {
            row.writers.insert((g.pid, g.tid));
        } else {
            row.readers.insert((g.pid, g.tid));
        }
    }
    for ((key, ..), row) in rows {
        let s = &row.stats;
        if s.stores == 0 && display.hitm(s) == 0 {
            continue;
        }
        if let Some(l) = lines.get_mut(&key) {
            l.offsets.push(row);
        }
    }
    let is_shared = |l: &C2cLine| l.stats.hitm() + l.stats.peer() > 0;
    for l in lines.values().filter(|l| is_shared(l)) {
        c.shared.merge(&l.stats);
        c.shared_lines += 1;
    }
    let sum = display.hitm(&c.shared);
    let mut shown: Vec<C2cLine> = lines
        .into_values()
        .filter(|l| {
            show_all
                || (is_shared(l)
                    && sum > 0
                    && display.hitm(&l.stats) as f64 / sum as f64 >= DISPLAY_LINE_LIMIT)
        })
        .collect();
    // The most displayed loads first; lines that tie keep the order of their keys (process,
    // then address), as perf's output sort keeps its collapsed lines' order.
    shown.sort_by_key(|l| std::cmp::Reverse(display.hitm(&l.stats)));
    // Rows by offset, then the displayed HITMs, most first (the grouping keys last).
    for l in &mut shown {
        l.offsets.sort_by(|a, b| {
            a.offset
                .cmp(&b.offset)
                .then(display.row_keys(&b.stats).cmp(&display.row_keys(&a.stats)))
        });
    }
    c.lines = shown;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::datasrc::{hops, tlb};

    fn src(lvl_: u64, snoop_: u64, num: u64, remote: bool) -> DataSrc {
        DataSrc::from_fields(
            op::LOAD,
            lvl_,
            snoop_,
            lock::NA,
            tlb::NA,
            num,
            remote,
            0,
            blk::NA,
            if remote { hops::SOCKET } else { 0 },
        )
    }

    #[test]
    fn each_load_is_one_class() {
        let mut s = C2cStats::default();
        s.add(
            src(lvl::HIT | lvl::L3, snoop::HITM, lvlnum::L3, false),
            200,
            2,
        );
        s.add(
            src(
                lvl::HIT | lvl::REM_CCE1,
                snoop::HITM,
                lvlnum::ANY_CACHE,
                true,
            ),
            300,
            1,
        );
        // A remote HITM whose level says RAM: a HITM, not also a DRAM load.
        s.add(src(lvl::HIT, snoop::HITM, lvlnum::RAM, true), 310, 1);
        s.add(
            src(lvl::HIT | lvl::L1, snoop::NONE, lvlnum::L1, false),
            5,
            3,
        );
        s.add(
            src(lvl::HIT | lvl::LOC_RAM, snoop::MISS, lvlnum::RAM, false),
            150,
            1,
        );
        s.add(src(lvl::HIT, snoop::MISS, lvlnum::RAM, true), 250, 1);
        assert_eq!((s.lcl_hitm, s.rmt_hitm, s.hitm()), (2, 2, 4));
        assert_eq!((s.ld_l1hit, s.lcl_dram, s.rmt_dram), (3, 1, 1));
        assert_eq!((s.lcl_hitm_cycles, s.rmt_hitm_cycles), (400, 610));
        assert_eq!(s.load_cycles, 15 + 150 + 250);
        assert_eq!((s.loads, s.records, s.stores), (9, 9, 0));
    }

    #[test]
    fn stores_by_l1() {
        let st = |lvl_: u64| {
            DataSrc::from_fields(
                op::STORE,
                lvl_,
                snoop::NA,
                lock::NA,
                tlb::NA,
                0,
                false,
                0,
                blk::NA,
                0,
            )
        };
        let mut s = C2cStats::default();
        s.add(st(lvl::HIT | lvl::L1), 0, 2);
        s.add(st(lvl::MISS | lvl::L1), 0, 1);
        s.add(st(lvl::NA), 0, 1);
        assert_eq!((s.st_l1hit, s.st_l1miss, s.st_na, s.stores), (2, 1, 1, 4));
    }
}
