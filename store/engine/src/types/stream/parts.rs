//! A stream taken apart and put together node by node, for the RDB codec
//! (`crate::rdb`): DUMP writes each node as the listpack Redis would hold,
//! RESTORE rebuilds the nodes a payload carries, with its counters as given.

use super::node::Node;
use super::{Meta, Stream};

impl Stream {
    /// The nodes in ID order.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// Adds a node whose IDs all follow the stream's current ones. The
    /// caller sets the counters afterwards ([`Stream::set_meta`]).
    pub(crate) fn push_node(&mut self, node: Node) {
        self.nodes.insert(node.master_id(), node);
    }

    /// Replaces the counters (a restored payload's, checked by the caller
    /// against the nodes).
    pub(crate) fn set_meta(&mut self, meta: Meta) {
        self.meta = meta;
    }
}
