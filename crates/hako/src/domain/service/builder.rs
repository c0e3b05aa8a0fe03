//! The entry to every pattern: [`ServiceBuilder`], which a node hands out
//! and each pattern extends with its own method (`publish_subscribe`,
//! `event`, ...), in its own folder.

use std::sync::Arc;

use crate::domain::name::ServiceName;
use crate::domain::nodefile::NodeInner;

/// Starts building a service; returned by [`Node::service_builder`](crate::Node::service_builder).
/// Its methods choose the messaging pattern: [`publish_subscribe`](Self::publish_subscribe),
/// [`event`](Self::event).
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
