//! The names of tags, keys and slots: their limits, the separator of a keyed counter's slot
//! name, and how such a name is split and shown. A leaf: the shared-memory layout (`shmem`)
//! and the error messages (`error`) both stand on it.

/// Longest tag name in bytes (PostgreSQL's identifier limit).
pub const NAME_MAX: usize = 63;
/// Longest key of a keyed counter (`seqgen_next(tag, key)`), in bytes.
pub const KEY_MAX: usize = 128;
/// Longest slot name: a tag, or a tag, [`KEY_SEP`] and a key (a keyed counter has a slot of
/// its own, named so).
pub const SLOT_NAME_MAX: usize = NAME_MAX + 1 + KEY_MAX;
/// Separates the tag from the key in the slot name of a keyed counter: NUL, which no `text`
/// value can hold, so no tag named by a caller of the one-argument functions is a keyed
/// counter's slot name (and tags and keys cannot contain control characters either).
pub const KEY_SEP: u8 = 0;

/// A slot name (or a message naming one) for people and for C strings: a keyed counter's
/// `t<NUL>k` as `t" key "k`, inside the quotes a message puts around a tag.
pub fn shown_name(text: String) -> String {
    if text.contains(KEY_SEP as char) {
        text.replace(KEY_SEP as char, "\" key \"")
    } else {
        text
    }
}

/// A slot name split into its tag and, for a keyed counter, its key.
pub fn split_name(name: &str) -> (&str, Option<&str>) {
    match name.split_once(KEY_SEP as char) {
        Some((tag, key)) => (tag, Some(key)),
        None => (name, None),
    }
}
