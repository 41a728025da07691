//! Locks that a panic elsewhere does not stop: every mutex of the client and
//! the server is taken through `lock`, never `lock().unwrap()`.

/// Lock a mutex, also when a panic elsewhere poisoned it: the data it guards
/// stays consistent (every critical section here is a plain update), and one
/// panicking task never stops the client.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
