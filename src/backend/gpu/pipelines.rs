//! The device's pipeline cache.
//!
//! A hand-written kernel's pipelines are found by `(name, immediates)`: the kernel's
//! `&'static str` name and whether its parameters are immediates. A generated kernel's are found
//! by its *shape*, any `Hash + Eq` value naming everything its source depends on: the shape is
//! hashed, and the entries under a hash are compared with the shape itself, so two shapes with
//! the same hash never share a pipeline. No key is formatted and no source is generated on a
//! lookup; a kernel's source (and its immediate variant) is made only when its pipeline is built.
//!
//! Each entry holds the pipeline with its bind-group layout (asked of wgpu once, at build time)
//! and how it takes its parameters.

use std::any::Any;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use super::sources::{assemble, with_immediate_params, Arithmetic, Kernel};
use crate::error::{Error, Result};

/// A built pipeline.
#[derive(Debug)]
pub(super) struct Pipe {
    pub(super) pipeline: wgpu::ComputePipeline,
    /// Its group 0 layout.
    pub(super) layout: wgpu::BindGroupLayout,
    /// Whether its `params` are immediates (else binding 0, a slice of the parameter arena).
    pub(super) immediates: bool,
    /// The label of its bind groups.
    pub(super) label: &'static str,
}

/// A generated kernel's shape, kept to tell apart shapes of the same hash.
type Shape = Box<dyn Any + Send + Sync>;

/// The pipelines of one device (behind the device's mutex).
#[derive(Default)]
pub(super) struct Pipelines {
    kernels: HashMap<(&'static str, bool), Arc<Pipe>>,
    generated: HashMap<u64, Vec<(Shape, Arc<Pipe>)>>,
    /// Pipelines built (an entry of `kernels` may share another's pipeline).
    built: usize,
    /// Host nanoseconds spent building them.
    build_ns: u64,
}

/// What builds a pipeline on the device: its arithmetic, and a build from complete WGSL.
pub(super) struct Builder<'a> {
    pub(super) arithmetic: Arithmetic,
    pub(super) device: &'a wgpu::Device,
}

impl Builder<'_> {
    /// Builds `source` (the shared arithmetic prepended, [`assemble`]) with entry point `entry`.
    fn build(&self, label: &'static str, source: &str, entry: &str, immediates: bool) -> Result<Arc<Pipe>> {
        let full = assemble(source, self.arithmetic);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(full.into()),
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Backend { backend: "gpu", reason: format!("kernel {label} failed to build: {e}") });
        }
        let layout = pipeline.get_bind_group_layout(0);
        Ok(Arc::new(Pipe { pipeline, layout, immediates, label }))
    }
}

fn hash_of<K: Hash + 'static>(shape: &K) -> u64 {
    let mut h = DefaultHasher::new();
    std::any::TypeId::of::<K>().hash(&mut h);
    shape.hash(&mut h);
    h.finish()
}

impl Pipelines {
    /// Pipelines built so far.
    pub(super) fn count(&self) -> usize {
        self.built
    }

    /// Host nanoseconds spent building them.
    pub(super) fn build_ns(&self) -> u64 {
        self.build_ns
    }

    /// Builds with `builder`, counting the pipeline and its time.
    fn build(
        &mut self,
        builder: &Builder<'_>,
        label: &'static str,
        source: &str,
        entry: &str,
        immediates: bool,
    ) -> Result<Arc<Pipe>> {
        let clock = std::time::Instant::now();
        let pipe = builder.build(label, source, entry, immediates);
        self.build_ns += u64::try_from(clock.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.built += usize::from(pipe.is_ok());
        pipe
    }

    /// The pipeline of `kernel`, taking its parameters as immediates if `immediates` and the
    /// kernel declares them so (else from the arena: [`Pipe::immediates`] says which).
    pub(super) fn kernel(&mut self, kernel: &Kernel, immediates: bool, builder: &Builder<'_>) -> Result<Arc<Pipe>> {
        if let Some(p) = self.kernels.get(&(kernel.name, immediates)) {
            return Ok(Arc::clone(p));
        }
        let immediate_source = if immediates { with_immediate_params(kernel.source()) } else { None };
        let pipe = match immediate_source {
            Some(source) => self.build(builder, kernel.name, &source, kernel.entry, true)?,
            // Without immediates: the arena variant, shared with the `(name, false)` entry.
            None => match self.kernels.get(&(kernel.name, false)) {
                Some(p) => Arc::clone(p),
                None => {
                    let p = self.build(builder, kernel.name, kernel.source(), kernel.entry, false)?;
                    self.kernels.insert((kernel.name, false), Arc::clone(&p));
                    p
                }
            },
        };
        self.kernels.insert((kernel.name, immediates), Arc::clone(&pipe));
        Ok(pipe)
    }

    /// The pipeline of the generated kernel of shape `shape` (parameters from the arena), built
    /// on first use from `source()`.
    pub(super) fn generated<K: Hash + Eq + Clone + Send + Sync + 'static>(
        &mut self,
        shape: &K,
        label: &'static str,
        source: impl FnOnce() -> String,
        entry: &str,
        builder: &Builder<'_>,
    ) -> Result<Arc<Pipe>> {
        let hash = hash_of(shape);
        let same = |(k, _): &&(Shape, Arc<Pipe>)| k.downcast_ref::<K>() == Some(shape);
        if let Some((_, p)) = self.generated.get(&hash).and_then(|v| v.iter().find(same)) {
            return Ok(Arc::clone(p));
        }
        let p = self.build(builder, label, &source(), entry, false)?;
        self.generated.entry(hash).or_default().push((Box::new(shape.clone()), Arc::clone(&p)));
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_hash_by_type_and_value() {
        assert_eq!(hash_of(&(1u32, 2u32)), hash_of(&(1u32, 2u32)));
        assert_ne!(hash_of(&(1u32, 2u32)), hash_of(&(2u32, 1u32)));
        // The same bits in another type are another shape.
        assert_ne!(hash_of(&7u64), hash_of(&7i64));
    }
}
