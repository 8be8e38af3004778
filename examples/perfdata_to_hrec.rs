//! Writes a file-mode perf.data's records as an hrec recording, one block stream per CPU as
//! hrec's recorder writes them (records of each CPU in file order, a block per 256 KiB):
//! `scripts/bench-memory.sh --hrec` measures reading hrec's own format with it.
//!
//! Usage: `perfdata_to_hrec IN.perf.data OUT.hrec`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hrec::data::Writer;
use hrec::decode::{self, Record};
use hrec::recording::{Recording, Source};

/// Bytes of one CPU's records per block.
const BLOCK: usize = 256 << 10;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: perfdata_to_hrec IN.perf.data OUT.hrec");
        return ExitCode::from(2);
    };
    match convert(input, output) {
        Ok(n) => {
            eprintln!("perfdata_to_hrec: wrote {} ({n} records)", output.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("perfdata_to_hrec: {e}");
            ExitCode::FAILURE
        }
    }
}

fn convert(input: &Path, output: &Path) -> Result<u64, String> {
    let rec = Recording::open(input).map_err(|e| e.to_string())?;
    let Source::PerfData(p) = &rec.source else {
        return Err(format!("{} is not a perf.data file", input.display()));
    };
    let data = p
        .data_file()
        .ok_or("only a file-mode, uncompressed perf.data is converted")?;
    let mut w = Writer::create(output, rec.meta()).map_err(|e| e.to_string())?;
    if let Some(ids) = rec.side("build-ids") {
        w.write_side("build-ids", &ids).map_err(|e| e.to_string())?;
    }
    let mut per_cpu: Vec<Vec<u8>> = Vec::new();
    let mut n = 0u64;
    for chunk in data.chunks() {
        for raw in decode::records(&chunk) {
            let raw = raw.map_err(|e| e.to_string())?;
            if raw.header.type_ >= 64 {
                continue; // perf's own records
            }
            let cpu = match rec.decoder.decode(&raw) {
                Ok(Record::Sample(s)) => s.cpu,
                Ok(other) => other.sample_id().and_then(|s| s.cpu),
                Err(_) => None,
            }
            .unwrap_or(0) as usize;
            if per_cpu.len() <= cpu {
                per_cpu.resize(cpu + 1, Vec::new());
            }
            per_cpu[cpu].extend_from_slice(raw.bytes);
            n += 1;
            if per_cpu[cpu].len() >= BLOCK {
                w.write_records(&per_cpu[cpu], cpu as u32)
                    .map_err(|e| e.to_string())?;
                per_cpu[cpu].clear();
            }
        }
    }
    for (cpu, b) in per_cpu.iter().enumerate() {
        if !b.is_empty() {
            w.write_records(b, cpu as u32).map_err(|e| e.to_string())?;
        }
    }
    let trailer = rec.trailer().cloned().unwrap_or_default();
    w.finish(trailer).map_err(|e| e.to_string())?;
    Ok(n)
}
