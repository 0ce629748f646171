//! The text arguments of the draws, read without an FFI call when they are plain.
//!
//! pgrx's `&str` argument detoasts every value through `pg_detoast_datum_packed`, an FFI call
//! with its error guard (a `sigsetjmp`), which a draw pays once per row and per argument. A
//! value that is neither compressed nor stored out of line (a tag's name, the key of a column
//! DEFAULT: always) needs no detoasting: its bytes follow its header. `bash bench/ab.sh`
//! measured the default key `''` of `seqgen_next(biz_tag, key DEFAULT '')` read through `&str`
//! at 10 ns per row (1.10x the one-argument draw of 0.6.0).

use std::sync::atomic::{AtomicU8, Ordering};

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::prelude::*;
use pgrx::{pg_sys, FromDatum};

/// A tag's name (`biz_tag`).
pub struct TagArg<'a>(pub &'a str);

/// The key (`key DEFAULT ''`): `None` when it is empty (the tag's own counter).
pub struct KeyArg<'a>(pub Option<&'a str>);

/// Is the database's encoding UTF-8 (0: not read yet, 1: yes, 2: no)? A backend serves one
/// database, so it is read once.
static UTF8: AtomicU8 = AtomicU8::new(0);

/// The text of a non-null `text` datum: read in place when it is plain and the database is
/// UTF-8 (PostgreSQL has checked the bytes), otherwise as pgrx reads it.
///
/// # Safety
/// `datum` is a non-null `text` datum.
#[inline]
unsafe fn text<'a>(datum: pg_sys::Datum, typoid: pg_sys::Oid) -> Option<&'a str> {
    let ptr: *const pg_sys::varlena = datum.cast_mut_ptr();
    // SAFETY: the caller's: `ptr` points at a varlena (an inline value or a TOAST pointer)
    let plain = unsafe { pgrx::varlena::varatt_is_1b(ptr) && !pgrx::varlena::varatt_is_1b_e(ptr) }
        || unsafe { pgrx::varlena::varatt_is_4b_u(ptr) };
    if plain && utf8() {
        // SAFETY: a plain varlena holds its bytes after its header, valid UTF-8 in a UTF-8
        // database
        return Some(unsafe { pgrx::varlena::text_to_rust_str_unchecked(ptr) });
    }
    // SAFETY: the caller's
    unsafe { <&'a str>::from_polymorphic_datum(datum, false, typoid) }
}

#[inline]
fn utf8() -> bool {
    match UTF8.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // SAFETY: a backend's database encoding, set before any function runs
            let yes = unsafe { pg_sys::GetDatabaseEncoding() } == pg_sys::pg_enc::PG_UTF8 as i32;
            UTF8.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
            yes
        }
    }
}

impl<'a> FromDatum for TagArg<'a> {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, typoid: pg_sys::Oid) -> Option<Self> {
        if is_null || datum.is_null() {
            return None;
        }
        // SAFETY: a non-null `text` datum
        unsafe { text(datum, typoid) }.map(TagArg)
    }
}

impl<'a> FromDatum for KeyArg<'a> {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, typoid: pg_sys::Oid) -> Option<Self> {
        if is_null || datum.is_null() {
            return None;
        }
        // SAFETY: a non-null `text` datum points at a varlena: inline (either header), or a
        // TOAST pointer, whose size is never 0
        if unsafe { pgrx::varlena::varsize_any_exhdr(datum.cast_mut_ptr()) } == 0 {
            return Some(KeyArg(None));
        }
        // SAFETY: a non-null `text` datum
        unsafe { text(datum, typoid) }.map(|s| KeyArg(Some(s)))
    }
}

macro_rules! text_arg {
    ($ty:ident) => {
        // SAFETY: a `text` argument, converted by its `FromDatum` above
        unsafe impl<'fcx> ArgAbi<'fcx> for $ty<'fcx> {
            unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
                let index = arg.index();
                // SAFETY: the caller's: the argument is a non-null `text`
                unsafe { arg.unbox_arg_using_from_datum() }
                    .unwrap_or_else(|| panic!("argument {index} must not be null"))
            }
        }
        impl_sql_translatable!($ty<'_>, "TEXT");
    };
}
text_arg!(TagArg);
text_arg!(KeyArg);
