//! Locks that a panic elsewhere does not stop: every lock in the host is taken
//! through these, never `lock().unwrap()`. A poisoned lock is taken as it is —
//! each critical section in the host is a plain update that leaves its data
//! consistent — so one panicking task (a plugin's host call, a server's
//! reader) never fails every later call that needs the same lock.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `Mutex::lock`, also when poisoned.
pub trait Unpoisoned<T: ?Sized> {
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Unpoisoned<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `RwLock::read` and `write`, also when poisoned.
pub trait UnpoisonedRw<T: ?Sized> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> UnpoisonedRw<T> for RwLock<T> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_poisoned_by_a_panic_is_still_taken() {
        let (mutex, rw) = (std::sync::Arc::new(Mutex::new(1)), std::sync::Arc::new(RwLock::new(1)));
        let (m, r) = (std::sync::Arc::clone(&mutex), std::sync::Arc::clone(&rw));
        let _ = std::thread::spawn(move || {
            let (_m, _r) = (m.lock().unwrap(), r.write().unwrap());
            panic!("poisons both");
        })
        .join();
        assert!(mutex.is_poisoned() && rw.is_poisoned());
        *mutex.locked() += 1;
        *rw.write_locked() += 1;
        assert_eq!((*mutex.locked(), *rw.read_locked()), (2, 2));
    }
}
