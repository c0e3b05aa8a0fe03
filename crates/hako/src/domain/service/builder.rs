//! The entry to every pattern: [`ServiceBuilder`], which a node hands out
//! and each pattern extends with its own method (`publish_subscribe`,
//! `event`, ...), in its own folder.

use std::sync::Arc;

use crate::domain::name::ServiceName;
use crate::domain::nodefile::NodeInner;

/// Starts building a service; returned by [`Node::service_builder`](crate::Node::service_builder).
/// Its methods choose the messaging pattern: [`publish_subscribe`](Self::publish_subscribe),
/// [`event`](Self::event), [`request_response`](Self::request_response).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-service-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let topic = node
///     .service_builder(&"Doc/Topic".try_into()?)
///     .publish_subscribe::<u64>()
///     .open_or_create()?;
/// let bell = node.service_builder(&"Doc/Bell".try_into()?).event().open_or_create()?;
/// let square = node
///     .service_builder(&"Doc/Square".try_into()?)
///     .request_response::<u64, u64>()
///     .open_or_create()?;
/// # Ok(()) }
/// ```
pub struct ServiceBuilder {
    pub(crate) node: Arc<NodeInner>,
    pub(crate) name: ServiceName,
}

impl std::fmt::Debug for ServiceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceBuilder")
            .field("name", &self.name)
            .finish()
    }
}

impl ServiceBuilder {
    pub(crate) fn new(node: Arc<NodeInner>, name: ServiceName) -> Self {
        Self { node, name }
    }
}

/// A setter of a pattern builder's quality of service: stores `Some(value)`
/// in the builder's `req.$field`.
macro_rules! qos_setter {
    ($(#[$doc:meta])* $fn:ident, $field:ident) => {
        $(#[$doc])*
        pub fn $fn(mut self, value: u32) -> Self {
            self.req.$field = Some(value);
            self
        }
    };
}
pub(crate) use qos_setter;
