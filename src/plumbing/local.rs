//! Backend-local state without thread-local storage.
//!
//! A PostgreSQL backend runs one thread, so per-backend caches can live in plain statics.
//! `thread_local!` in a shared library costs a `__tls_get_addr` call per access, which shows
//! in functions that run once per row.

use std::cell::{RefCell, RefMut};

/// A value private to this backend process.
pub struct BackendLocal<T>(RefCell<Option<T>>);

// SAFETY: a backend is single-threaded; pg_seqgen never touches these from other threads.
unsafe impl<T> Sync for BackendLocal<T> {}

impl<T: Default> BackendLocal<T> {
    pub const fn new() -> Self {
        BackendLocal(RefCell::new(None))
    }

    /// Borrow the value, creating it on first use. Callers must not hold the borrow across
    /// a call that could re-enter the same function.
    #[inline]
    pub fn get(&self) -> RefMut<'_, T> {
        RefMut::map(self.0.borrow_mut(), |v| v.get_or_insert_with(T::default))
    }

    /// [`get`](Self::get), or `None` while it is borrowed (for exit callbacks, which may run
    /// after an error left a borrow behind).
    pub fn try_get(&self) -> Option<RefMut<'_, T>> {
        self.0.try_borrow_mut().ok().map(|b| RefMut::map(b, |v| v.get_or_insert_with(T::default)))
    }
}
