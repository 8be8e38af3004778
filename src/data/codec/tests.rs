//! Tests of `codec`.

use super::*;
use Version::{V1, V2, V3};
use proptest::prelude::*;

fn record(ty: u32, misc: u16, words: &[u64]) -> Vec<u8> {
    let size = 8 + 8 * words.len() as u16;
    let mut r = Vec::new();
    r.extend_from_slice(&ty.to_le_bytes());
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&size.to_le_bytes());
    for w in words {
        r.extend_from_slice(&w.to_le_bytes());
    }
    r
}

#[test]
fn zigzag_and_varints() {
    for v in [0u64, 1, u64::MAX, 1 << 63, 12345, (-2i64) as u64] {
        assert_eq!(unzigzag(zigzag(v)), v);
        let mut b = Vec::new();
        put_varint(&mut b, v);
        assert_eq!(b.len(), varint_len(v));
        assert_eq!(Input { bytes: &b, at: 0 }.varint(), Ok(v));
    }
    assert_eq!(zigzag((-1i64) as u64), 1);
    assert_eq!(zigzag(1), 2);
    // An 11-byte varint is rejected, not wrapped.
    let long = [0xffu8; 10];
    assert!(
        Input {
            bytes: &long,
            at: 0
        }
        .varint()
        .is_err()
    );
}

#[test]
fn samples_become_small_columns() {
    let mut raw = Vec::new();
    let mut rng = 1u64;
    for i in 0..100u64 {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let t = 1_000_000 + i * 250_000 + (i * 7919) % 300;
        let ip = [0x40_1000, 0x40_5a30, 0x40_c2f8][(rng >> 33) as usize % 3];
        raw.extend(record(9, 2, &[ip, 77 | 77 << 32, t, 250_000]));
    }
    let enc = encode(&raw).expect("well-formed");
    assert!(enc.len() < 100 * 4, "{} of 4000 bytes", enc.len());
    assert_eq!(decode(&enc, raw.len(), V3).unwrap(), raw);
    assert_eq!(count_records(&raw), 100);
    // The byte part's length, then N, S and the shape (one shape: no coded shape
    // indices), then the four column modes with their fixed fields.
    // V3 range-codes the dictionary's gaps; V2 writes them as varints in the byte part.
    for (enc, gap_bytes) in [(enc, 0), (encode_as(&raw, V2).unwrap(), 3 + 3)] {
        let fixed = usize::from(enc[0]);
        assert_eq!(&enc[1..3], &[100, 1]);
        let mut at = 3 + 8;
        assert_eq!(enc[at], MODE_DICT, "ip: three distinct values");
        // mode, k, t0 (and V2's two 3-byte varint gaps)
        at += 1 + 1 + 8 + gap_bytes;
        assert_eq!(enc[at], MODE_DELTA, "pid/tid is constant");
        at += 9;
        assert_eq!(enc[at], MODE_STRIDE, "time: period plus jitter");
        at += 9 + 3;
        assert_eq!(enc[at], MODE_DELTA, "period is constant");
        assert_eq!(at + 9, 1 + fixed);
    }
}

/// Under `V2` the user and kernel samples of a thread share their columns: the times of
/// alternating samples are one stride series, not two with twice the stride and gaps. A `V1`
/// block still reads back, as its own layout only.
#[test]
fn samples_of_both_cpumodes_share_columns() {
    let mut raw = Vec::new();
    for i in 0..200u64 {
        let misc = if i % 3 == 0 { 1 } else { 2 };
        let t = 1_000_000 + i * 250_000 + (i * 7919) % 300;
        raw.extend(record(
            9,
            misc,
            &[0x40_1000 + (i % 2) * 8, 77 | 77 << 32, t, 250_000],
        ));
    }
    let (v1, v2) = (encode_as(&raw, V1).unwrap(), encode_as(&raw, V2).unwrap());
    assert!(v2.len() < v1.len(), "{} >= {}", v2.len(), v1.len());
    // Two shapes; the first column (the ip of both) is a dictionary.
    let mut input = Input { bytes: &v2, at: 0 };
    let fixed = input.varint().unwrap() as usize;
    let start = input.at;
    assert_eq!((input.varint(), input.varint()), (Ok(200), Ok(2)));
    input.at += 16;
    assert_eq!(input.byte(), Ok(MODE_DICT));
    // Four columns of one group, not eight of two: a smaller byte part.
    let v1_fixed = Input { bytes: &v1, at: 0 }.varint().unwrap() as usize;
    assert!(fixed + 4 * 9 <= v1_fixed, "{fixed} vs {v1_fixed}");
    assert!(start + fixed <= v2.len());
    assert_eq!(decode(&v2, raw.len(), V2).unwrap(), raw);
    assert_eq!(decode(&v1, raw.len(), V1).unwrap(), raw);
    assert!(decode(&v1, raw.len(), V2).is_err());
}

#[test]
fn malformed_input_is_not_transformed() {
    assert!(encode(&[0u8; 7]).is_none());
    assert!(encode(&[0u8; 8]).is_none(), "size 0");
    let mut r = record(9, 0, &[1, 2]);
    r.extend_from_slice(&[0u8; 8]);
    assert!(encode(&r).is_none());
    assert_eq!(count_records(&r), 1);
    assert_eq!(encode(&[]).map(|e| decode(&e, 0, V3)), Some(Ok(Vec::new())));
}

#[test]
fn decode_rejects_lies() {
    let raw = record(9, 0, &[1, 2, 3]);
    let enc = encode(&raw).unwrap();
    assert!(decode(&enc, raw.len() + 8, V3).is_err());
    assert!(decode(&enc, raw.len() - 8, V3).is_err());
    assert!(decode(&enc[..enc.len() - 1], raw.len(), V3).is_err());
    let mut more = enc.clone();
    more.push(0);
    assert!(decode(&more, raw.len(), V3).is_err());
}

fn records_strategy() -> impl Strategy<Value = Vec<u8>> {
    let rec = (
        prop::sample::select(vec![9u32, 10, 3, 2]),
        0u16..4,
        prop::collection::vec(any::<u64>(), 0..6),
        any::<bool>(),
    )
        .prop_map(|(ty, misc, mut words, smooth)| {
            if smooth {
                // Near-constant words, like real samples.
                for (i, w) in words.iter_mut().enumerate() {
                    *w = (*w % 16) + i as u64 * 1000;
                }
            }
            record(ty, misc, &words)
        });
    prop::collection::vec(rec, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_records(raw in records_strategy()) {
        for v in [V1, V2, V3] {
            let enc = encode_as(&raw, v).expect("well-formed records");
            prop_assert_eq!(decode(&enc, raw.len(), v).unwrap(), raw.clone());
        }
    }

    #[test]
    fn round_trip_or_refuse_arbitrary_bytes(raw in prop::collection::vec(any::<u8>(), 0..300)) {
        for v in [V1, V2, V3] {
            if let Some(enc) = encode_as(&raw, v) {
                prop_assert_eq!(decode(&enc, raw.len(), v).unwrap(), raw.clone());
            }
        }
    }

    #[test]
    fn damaged_encodings_never_panic(
        raw in records_strategy(),
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 1..4),
        cut in any::<usize>(),
    ) {
        let mut enc = encode(&raw).expect("well-formed records");
        if enc.is_empty() {
            return Ok(());
        }
        for (at, x) in flips {
            let i = at % enc.len();
            enc[i] ^= x;
        }
        // Any outcome but a panic: an error, or some bytes of the promised length.
        if let Ok(out) = decode(&enc, raw.len(), V3) {
            prop_assert_eq!(out.len(), raw.len());
        }
        let cut = cut % (enc.len() + 1);
        if let Ok(out) = decode(&enc[..cut], raw.len(), V3) {
            prop_assert_eq!(out.len(), raw.len());
        }
    }

    #[test]
    fn decode_never_panics(enc in prop::collection::vec(any::<u8>(), 0..200), len in 0usize..4096) {
        for v in [V1, V2, V3] {
            if let Ok(out) = decode(&enc, len, v) {
                prop_assert_eq!(out.len(), len);
            }
        }
    }
}
