//! A solver's whole iteration on the device
//! ([`strata::backend::ScalarKernels::iterate_on_device`]): one CUDA graph per recorded
//! iteration, a WHILE conditional node (CUDA 12.4+) whose body is the iteration's kernels,
//! captured once, and the stopping test (kernels/loop.cu) at its end, which logs the residual
//! and sets the node's condition. A solve is then one graph launch and one read of the log,
//! where the host loop launches and waits once per iteration.
//!
//! The body is captured into the conditional node's graph on the capture stream of
//! [`Fields::replay`] (graph.rs), so a V-cycle the body replays is captured inline; the graph
//! is launched on the backend's stream, in order with everything else.

use super::*;
use cudarc::driver::sys;
use std::ptr::{null, null_mut};
use strata::backend::{DeviceTest, Recording, MAX_DEVICE_ITERATIONS};

/// A recorded iteration, ready to launch.
struct Loop {
    ctx: Arc<CudaContext>,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    /// log[0]: iterations run, log[1]: the test's bound, then [‖r‖², σ] of iteration `it` at
    /// 2 it and 2 it + 1 (kernels/loop.cu).
    log: CudaSlice<f64>,
    /// Kernels of one iteration, the test included.
    kernels: u64,
}

// SAFETY: a CUDA graph and its exec may be used from any thread of the process (the context is
// bound before each use); the driver asks that no two threads use one at once: this private
// type is launched only through `&mut` (`Recording::get_mut`) by `iterate_on_device`.
unsafe impl Send for Loop {}
// SAFETY: as above; a shared `&Loop` gives access to nothing.
unsafe impl Sync for Loop {}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: both were made by `capture_loop`, are destroyed only here, and no launch of
        // the exec is pending on the host's side (each launch is waited for by reading its log).
        unsafe {
            let _ = sys::cuGraphExecDestroy(self.exec);
            let _ = sys::cuGraphDestroy(self.graph);
        }
    }
}

/// A graph destroyed on drop unless taken (the failures of `capture_loop`).
struct GraphGuard(sys::CUgraph);

impl GraphGuard {
    fn take(mut self) -> sys::CUgraph {
        std::mem::replace(&mut self.0, null_mut())
    }
}

impl Drop for GraphGuard {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a graph made by `capture_loop` and not handed on.
            let _ = unsafe { sys::cuGraphDestroy(self.0) };
        }
    }
}

/// A driver result as a refusal's reason, naming the call.
fn why(call: &str, r: sys::CUresult) -> std::result::Result<(), String> {
    r.result().map_err(|e| format!("{call}: {e}"))
}

impl CudaBackend {
    /// [`strata::backend::ScalarKernels::iterate_on_device`] on the GPU (see the module's
    /// documentation).
    pub(super) fn device_loop(
        &self,
        rec: &mut Recording,
        key: &[u64],
        scalars: u64,
        test: &DeviceTest,
        body: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Vec<[f64; 2]>>> {
        if !(self.tuning.graphs && self.tuning.loops)
            || rec.refused().is_some()
            || self.capturing.load(Ordering::Relaxed)
            || scalars == 0
            || test.max_it == 0
            || test.max_it > MAX_DEVICE_ITERATIONS
        {
            return Ok(None);
        }
        // The test's shape is part of the recording; its bound is written at each launch.
        let mut full = key.to_vec();
        full.extend([
            scalars,
            test.rr as u64,
            test.sigma.map_or(u64::MAX, |s| s as u64),
            test.max_it as u64,
            u64::from(test.fixed),
        ]);
        if !rec.contains(&full) {
            if rec.is_full() {
                return Ok(None);
            }
            let f = self.loop_test.get_or_init(|| {
                crate::kernels::load_loop_test(&self.ctx).map_err(|e| e.to_string())
            });
            let recorded = match f {
                Ok(f) => self.capture_loop(f, scalars, test, body),
                Err(e) => Err(e.clone()),
            };
            match recorded {
                Ok(l) => {
                    rec.insert(&full, l);
                }
                Err(e) => {
                    rec.refuse(e);
                    return Ok(None);
                }
            }
        }
        let Some(l) = rec.get_mut::<Loop>(&full) else {
            return Ok(None);
        };
        self.launch_loop(l, test.bound).map(Some)
    }

    /// Records `body` and the test `f` into a new graph's WHILE node, or says why it could not.
    fn capture_loop(
        &self,
        f: &cudarc::driver::CudaFunction,
        scalars: u64,
        test: &DeviceTest,
        body: &mut dyn FnMut() -> Result<()>,
    ) -> std::result::Result<Loop, String> {
        let cap = self.capture_stream()?;
        self.ctx.bind_to_thread().map_err(|e| e.to_string())?;
        let log = self
            .stream
            .alloc_zeros::<f64>(2 * test.max_it + 2)
            .map_err(|e| e.to_string())?;
        let ctx = self.ctx.cu_ctx();
        let mut graph = null_mut();
        // SAFETY: a valid out-pointer; the graph is owned by the guard from here on.
        why("cuGraphCreate", unsafe {
            sys::cuGraphCreate(&mut graph, 0)
        })?;
        let graph = GraphGuard(graph);
        let mut handle: sys::CUgraphConditionalHandle = 0;
        // SAFETY: `graph.0` is a live graph of this context; default 1: each launch enters the
        // loop (the test decides after every iteration).
        why("cuGraphConditionalHandleCreate", unsafe {
            sys::cuGraphConditionalHandleCreate(
                &mut handle,
                graph.0,
                ctx,
                1,
                sys::CU_GRAPH_COND_ASSIGN_DEFAULT,
            )
        })?;
        // SAFETY: all-zero is a valid value of this plain C struct (null pointers, zero sizes);
        // the fields the conditional node reads are set next.
        let mut params: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
        params.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        params.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
            handle,
            type_: sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
            size: 1,
            phGraph_out: null_mut(),
            ctx,
        };
        let mut node = null_mut();
        // SAFETY: a live graph, no dependencies, parameters of a conditional node as set above.
        why("cuGraphAddNode", unsafe {
            sys::cuGraphAddNode_v2(&mut node, graph.0, null(), null(), 0, &mut params)
        })?;
        // SAFETY: the driver filled `phGraph_out` with an array of `size` = 1 body graphs,
        // owned by the node.
        let body_graph = unsafe { *params.__bindgen_anon_1.conditional.phGraph_out };
        // SAFETY: `cap` is a stream of this context not being captured; the body graph is live.
        why("cuStreamBeginCaptureToGraph", unsafe {
            sys::cuStreamBeginCaptureToGraph(
                cap.cu_stream(),
                body_graph,
                null(),
                null(),
                0,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        })?;
        self.counts[2].store(0, Ordering::Relaxed);
        self.capturing.store(true, Ordering::Relaxed);
        let ran = body().and_then(|()| self.launch_test(f, handle, scalars, test, &log));
        self.capturing.store(false, Ordering::Relaxed);
        let kernels = self.counts[2].load(Ordering::Relaxed);
        let mut captured = null_mut();
        // Ends the capture whatever happened in the body.
        // SAFETY: the capture begun above, on this thread.
        let ended = why("cuStreamEndCapture", unsafe {
            sys::cuStreamEndCapture(cap.cu_stream(), &mut captured)
        });
        ran.map_err(|e| format!("the iteration failed while captured: {e}"))?;
        ended?;
        let mut exec = null_mut();
        // SAFETY: a complete graph of this context; a valid out-pointer.
        why("cuGraphInstantiate", unsafe {
            sys::cuGraphInstantiateWithFlags(&mut exec, graph.0, 0)
        })?;
        Ok(Loop {
            ctx: self.ctx.clone(),
            graph: graph.take(),
            exec,
            log,
            kernels,
        })
    }

    /// Queues the stopping test (kernels/loop.cu) on the capture stream.
    fn launch_test(
        &self,
        f: &cudarc::driver::CudaFunction,
        handle: sys::CUgraphConditionalHandle,
        scalars: u64,
        test: &DeviceTest,
        log: &CudaSlice<f64>,
    ) -> Result<()> {
        let rr = test.rr as i32;
        let sigma = test.sigma.map_or(-1, |s| s as i32);
        let max_it = test.max_it as i32;
        let fixed = i32::from(test.fixed);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.base(), f);
        b.arg(&handle)
            .arg(&scalars)
            .arg(&rr)
            .arg(&sigma)
            .arg(log)
            .arg(&max_it)
            .arg(&fixed);
        // SAFETY: `scalars` is the address of the caller's live slots, which hold the slots
        // `rr` and `sigma` (checked by the caller); `log` holds 2 max_it + 2 values, the
        // most the test writes (it stops at max_it).
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    /// Launches a recorded iteration with the test's `bound` and waits for its log.
    fn launch_loop(&self, l: &mut Loop, bound: f64) -> Result<Vec<[f64; 2]>> {
        cu(self.ctx.bind_to_thread())?;
        cu(self
            .stream
            .memcpy_htod(&[0.0, bound], &mut l.log.slice_mut(0..2)))?;
        self.counts[1].fetch_add(1, Ordering::Relaxed);
        // SAFETY: `l.exec` is a live graph exec of this context; the fields and slots its
        // kernels touch are those of its key, which the caller holds for the call.
        cu(unsafe { cudarc::driver::result::graph::launch(l.exec, self.stream.cu_stream()) })?;
        let mut host = vec![0.0; l.log.len()];
        cu(self.stream.memcpy_dtoh(&l.log, &mut host))?;
        let n = host[0] as usize;
        if !(1..=(l.log.len() - 2) / 2).contains(&n) {
            return Err(backend_err(format!(
                "the device-side iteration logged {} iterations",
                host[0]
            )));
        }
        self.counts[0].fetch_add(l.kernels * n as u64, Ordering::Relaxed);
        Ok((1..=n).map(|it| [host[2 * it], host[2 * it + 1]]).collect())
    }
}
