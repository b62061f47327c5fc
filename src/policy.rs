//! Pure validators and resolvers over plain data (no IO). Each returns every problem it
//! finds, each naming the field.

pub mod scheduling;
