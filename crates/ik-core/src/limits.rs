//! TODO(limits): being written.
