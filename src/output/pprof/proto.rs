//! The messages of `profile.proto` (package `perftools.profiles`), field numbers as there,
//! written by hand with prost's derive (nothing is generated at build time).

/// A profile.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample is.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Binaries; `mapping[0]` is the main binary.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Code locations referenced by samples.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions referenced by locations.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string; `string_table[0]` is `""`.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Regexp of frames to drop (string index).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Regexp of frames to keep (string index).
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the collection started, ns since the epoch (UTC).
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long it ran.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// The kind of events between samples.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The number of events between samples.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form text (string indexes).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The preferred sample type (string index of its type).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// A value's meaning and unit (string indexes).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// Type, e.g. `cycles`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// Unit, e.g. `count`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// Values at one stack.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Location ids, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A key with a string or numeric value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value (string index).
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// Unit of `num` (string index).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A mapped binary.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Start of the mapped range.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// End of the mapped range.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// File offset of `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// File name (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Build-id (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Locations have function names.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Locations have source files.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Locations have line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Locations have inline frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// A code location.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its mapping (0: none).
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// Instruction address.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Inline chain, innermost first; the last is the function the others are inlined in.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Several symbols share this address.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function and a line in it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// Function id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Source line (0: unknown).
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// Source column (0: unknown).
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// A function.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Human-readable name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Name as the system knows it (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// First line of the function (0: unknown).
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
