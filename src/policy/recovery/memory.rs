//! Session recovery preferences (spec 002 "Ownership, success, and stops"; "Common recovery"):
//! the remembered successful provider of each logical model and the remembered compressor start.
//!
//! * Only a successful action publishes; failure, cancellation, interruption and unknown outcomes
//!   publish nothing.
//! * Action admission order defines freshness: a later-started success wins over an
//!   earlier-started one, whatever order they finish in.
//! * A preference reset (reopening, replacement, handoff) clears everything and invalidates
//!   publication from every earlier admission.
//! * The compressor start never moves to an earlier entry: freshness never permits that.
//!
//! The preferences belong to the session, never to a configuration file.

use std::collections::BTreeMap;

use super::Remembered;

/// How an action ended, as far as publication is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionOutcome {
    Ok,
    Failed,
    Cancelled,
    Interrupted,
    Unknown,
}

/// Admission sequence number of an action: increasing in admission order within a session.
pub type Admission = u64;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionPreferences {
    /// Publications from admissions before this are invalid (the last reset).
    floor: Admission,
    providers: BTreeMap<String, (String, Admission)>,
    compressor: Option<(usize, Admission)>,
}

impl SessionPreferences {
    pub fn new() -> Self {
        Self::default()
    }

    fn permitted(&self, admission: Admission, outcome: ActionOutcome) -> bool {
        outcome == ActionOutcome::Ok && admission >= self.floor
    }

    /// Publish the provider that served a finished action on `model`. Returns whether the
    /// preference changed hands (a stale or unsuccessful publication is dropped).
    pub fn publish_provider(
        &mut self,
        admission: Admission,
        outcome: ActionOutcome,
        model: &str,
        provider: &str,
    ) -> bool {
        if !self.permitted(admission, outcome) {
            return false;
        }
        match self.providers.get(model) {
            Some((_, newer)) if *newer > admission => false,
            _ => {
                self.providers
                    .insert(model.to_owned(), (provider.to_owned(), admission));
                true
            }
        }
    }

    /// Publish the compressor entry that succeeded. An earlier entry than the remembered start
    /// is refused even from a newer admission; an older admission never wins.
    pub fn publish_compressor(
        &mut self,
        admission: Admission,
        outcome: ActionOutcome,
        entry: usize,
    ) -> bool {
        if !self.permitted(admission, outcome) {
            return false;
        }
        match self.compressor {
            Some((start, newer)) if entry < start || newer > admission => false,
            _ => {
                self.compressor = Some((entry, admission));
                true
            }
        }
    }

    /// Preference reset: clear everything and refuse publications from admissions before
    /// `next_admission`.
    pub fn reset(&mut self, next_admission: Admission) {
        self.floor = next_admission;
        self.providers.clear();
        self.compressor = None;
    }

    /// The remembered successful provider of each logical model.
    pub fn remembered(&self) -> Remembered {
        self.providers
            .iter()
            .map(|(model, (provider, _))| (model.clone(), provider.clone()))
            .collect()
    }

    /// The compressor entry a later action starts at (earlier entries are excluded).
    pub fn compressor_start(&self) -> usize {
        self.compressor.map_or(0, |(entry, _)| entry)
    }
}
