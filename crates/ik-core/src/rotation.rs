//! TODO(rotation): being written.
