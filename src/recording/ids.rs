//! Which event a record belongs to: every fd of an event (one per CPU, one per thread) has
//! its own id, and a record's id picks the attr its sample layout follows and the plan event
//! it counts for. Both file readers (hrec's and perf.data's) build their decoder here, so this
//! file imports neither of them.

use std::collections::HashMap;

use crate::data::Meta;
use crate::decode::Decoder;

/// The decoder of a header's attrs and ids, and the event of every id.
pub(crate) fn decoder_of(meta: &Meta) -> (Decoder, HashMap<u64, usize>) {
    let decoder = Decoder::new(
        meta.events
            .iter()
            .flat_map(|e| e.ids.iter().map(move |i| (i.id, e.attr))),
    );
    let id_event = meta
        .events
        .iter()
        .enumerate()
        .flat_map(|(n, e)| e.ids.iter().map(move |i| (i.id, n)))
        .collect();
    (decoder, id_event)
}
