//! Handles: devices and models live in tables keyed by the ids the C side holds, so a closed
//! or never-opened handle is `HCQ_ERR_CLOSED`, never a use of freed memory.

use crate::error::{Fail, fail};
use crate::hcq_model;
use crate::hcq_status::*;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// A tensor's name and shape as the header hands them out.
pub(crate) type Info = (CString, Vec<u64>);

/// An open model and the host copies of its outputs that `hcq_model_output_ptr` hands out
/// where the front door cannot point at them in place (allocated at the first such call).
pub(crate) struct Live {
    pub model: hcq_runtime::Model,
    pub staging: Vec<Vec<u8>>,
}

/// A model and what the header hands out about it (owned here, so the pointers stay valid).
pub(crate) struct ModelCell {
    pub live: Mutex<Option<Live>>,
    pub infos_in: Vec<Info>,
    pub infos_out: Vec<Info>,
    pub tensors_in: Vec<hcq_runtime::Tensor>,
    pub tensors_out: Vec<hcq_runtime::Tensor>,
}

impl ModelCell {
    pub(crate) fn new(model: hcq_runtime::Model) -> Self {
        let info = |t: &hcq_runtime::Tensor| (CString::new(t.name.clone()).unwrap_or_default(), t.shape.clone());
        let staging = vec![Vec::new(); model.outputs().len()];
        ModelCell {
            infos_in: model.inputs().iter().map(info).collect(),
            infos_out: model.outputs().iter().map(info).collect(),
            tensors_in: model.inputs().to_vec(),
            tensors_out: model.outputs().to_vec(),
            live: Mutex::new(Some(Live { model, staging })),
        }
    }
}

/// A table of handles.
pub(crate) struct Table<T> {
    map: RwLock<HashMap<u64, Arc<T>>>,
}

impl<T> Table<T> {
    pub(crate) fn get(&self, id: u64, what: &str) -> Result<Arc<T>, Fail> {
        let m = self.map.read().unwrap_or_else(|p| p.into_inner());
        match m.get(&id) {
            Some(x) => Ok(x.clone()),
            None => fail(HCQ_ERR_CLOSED, format!("{what} handle {id} is closed or was never opened")),
        }
    }
    pub(crate) fn insert(&self, x: T) -> u64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.map.write().unwrap_or_else(|p| p.into_inner()).insert(id, Arc::new(x));
        id
    }
    pub(crate) fn remove(&self, id: u64, what: &str) -> Result<Arc<T>, Fail> {
        let mut m = self.map.write().unwrap_or_else(|p| p.into_inner());
        match m.remove(&id) {
            Some(x) => Ok(x),
            None => fail(HCQ_ERR_CLOSED, format!("{what} handle {id} is closed or was never opened")),
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A device and the lock its loads take (one load at a time per device).
pub(crate) struct DeviceCell {
    pub dev: hcq_runtime::Device,
    pub loading: Mutex<()>,
}

impl DeviceCell {
    /// Load a bundle on the device, one load at a time.
    pub(crate) fn load(&self, bundle: hcq_runtime::Bundle<'_>) -> Result<hcq_runtime::Model, Fail> {
        let _one = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        Ok(self.dev.load(bundle)?)
    }
}

pub(crate) fn devices() -> &'static Table<DeviceCell> {
    static T: std::sync::OnceLock<Table<DeviceCell>> = std::sync::OnceLock::new();
    T.get_or_init(|| Table { map: RwLock::new(HashMap::new()) })
}

pub(crate) fn models() -> &'static Table<ModelCell> {
    static T: std::sync::OnceLock<Table<ModelCell>> = std::sync::OnceLock::new();
    T.get_or_init(|| Table { map: RwLock::new(HashMap::new()) })
}

/// Run `f` on model `m` under its lock.
pub(crate) fn with_live<R>(m: hcq_model, f: impl FnOnce(&mut Live) -> Result<R, Fail>) -> Result<R, Fail> {
    let cell = models().get(m.id, "model")?;
    let mut g = match cell.live.lock() {
        Ok(g) => g,
        Err(_) => return fail(HCQ_ERR_PANIC, "model is unusable after an internal panic; close it"),
    };
    match g.as_mut() {
        Some(live) => f(live),
        None => fail(HCQ_ERR_CLOSED, format!("model handle {} is closed", m.id)),
    }
}

/// Run `f` on model `m`'s runtime model under its lock.
pub(crate) fn with_model<R>(
    m: hcq_model,
    f: impl FnOnce(&mut hcq_runtime::Model) -> Result<R, Fail>,
) -> Result<R, Fail> {
    with_live(m, |l| f(&mut l.model))
}
