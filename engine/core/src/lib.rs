pub mod frontier;
pub mod output;
pub mod politeness;
pub mod record;
