//! CUDA graphs for [`strata::backend::Fields::replay`]: a body of kernels (a V-cycle) captured
//! once and replayed with one launch.
//!
//! The backend runs on the legacy default stream, which cannot be captured, so a body is
//! captured on a stream of its own ([`CudaBackend::base`] points every launch there while it
//! runs) and the graph is launched on the backend's stream, in order with everything else.
//! Capture never executes: the first call captures, then launches the graph like every later
//! call. A body that cannot be captured — it reads a reduction back or synchronises — makes
//! the capture fail; then it runs directly, and the recording remembers the refusal.

use super::*;
use cudarc::driver::{sys, CudaGraph};
use strata::backend::Recording;

/// A captured body, ready to launch, and how many kernels it holds.
struct Graph(CudaGraph, u64);

// SAFETY: a CUDA graph exec may be launched from any thread of the process (cudarc binds the
// context first). The driver asks that no two threads use one graph at once: this private type
// is launched only by `replay_graph`, which holds the recording that owns it through `&mut`,
// and nothing else can reach the graph through a shared reference.
unsafe impl Send for Graph {}
// SAFETY: as above; a shared `&Graph` gives access to nothing.
unsafe impl Sync for Graph {}

impl CudaBackend {
    /// [`strata::backend::Fields::replay`] on the GPU (see the module's documentation).
    pub(super) fn replay_graph(
        &self,
        rec: &mut Recording,
        key: &[u64],
        body: &mut dyn FnMut() -> Result<()>,
    ) -> Result<bool> {
        if !self.tuning.graphs || rec.refused().is_some() || self.capturing.load(Ordering::Relaxed)
        {
            return body().map(|()| true);
        }
        if let Some(g) = rec.get::<Graph>(key) {
            return self.launch_graph(&g.0, g.1).map(|()| false);
        }
        if rec.is_full() {
            // More arrangements than the recording keeps: this one runs directly.
            return body().map(|()| true);
        }
        match self.capture(body) {
            Ok((g, kernels)) => {
                self.launch_graph(&g, kernels)?;
                rec.insert(key, Graph(g, kernels));
            }
            Err(why) => {
                rec.refuse(why);
                body()?;
            }
        }
        // Captured (the body ran, queuing into the graph) or run directly.
        Ok(true)
    }

    /// Captures `body` into a graph (with the number of kernels it queued), or says why it
    /// could not be captured.
    fn capture(
        &self,
        body: &mut dyn FnMut() -> Result<()>,
    ) -> std::result::Result<(CudaGraph, u64), String> {
        let cap = self.capture_stream()?;
        cap.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| e.to_string())?;
        self.counts[2].store(0, Ordering::Relaxed);
        self.capturing.store(true, Ordering::Relaxed);
        let ran = body();
        self.capturing.store(false, Ordering::Relaxed);
        let kernels = self.counts[2].load(Ordering::Relaxed);
        // Ends the capture whatever happened in the body.
        let graph = cap.end_capture(sys::CUgraphInstantiate_flags(0));
        ran.map_err(|e| format!("the body failed while captured: {e}"))?;
        match graph {
            Ok(Some(g)) => Ok((g, kernels)),
            Ok(None) => Err("the body queued no work".into()),
            Err(e) => Err(format!("capture failed: {e}")),
        }
    }

    /// The stream bodies are captured on, made on first use, with the streams a body may
    /// fork to.
    pub(super) fn capture_stream(&self) -> std::result::Result<Arc<CudaStream>, String> {
        let cap = match self.capture.get() {
            Some(c) => c.clone(),
            None => {
                let c = self.stream.fork().map_err(|e| e.to_string())?;
                self.capture.get_or_init(|| c).clone()
            }
        };
        // Streams the body may fork to must exist before the capture: making them records an
        // event on the backend's stream, which is not being captured.
        self.tile_streams().map_err(|e| e.to_string())?;
        Ok(cap)
    }

    /// Launches `g`, of `kernels` kernels, on the backend's stream (counted: one host launch).
    fn launch_graph(&self, g: &CudaGraph, kernels: u64) -> Result<()> {
        cu(self.ctx.bind_to_thread())?;
        self.counts[0].fetch_add(kernels, Ordering::Relaxed);
        self.counts[1].fetch_add(1, Ordering::Relaxed);
        // SAFETY: `g` is a live graph exec of this context; the fields its kernels touch are
        // those of its key, which the caller holds for the call (the recording's contract).
        cu(unsafe {
            cudarc::driver::result::graph::launch(g.cu_graph_exec(), self.stream.cu_stream())
        })
    }
}
