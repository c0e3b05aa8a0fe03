//! The progress of a suite run, as `hako bench`'s progress bar shows it.

/// A step of the run, for a progress bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Steps done.
    pub done: u64,
    /// Steps in all.
    pub total: u64,
    /// What runs now.
    pub what: String,
}

/// The run's progress: steps finished out of all, and what runs now.
/// Reports go to a callback (the `hako bench` progress bar); the count
/// only grows and never passes the total.
pub(crate) struct Steps<'a> {
    done: u64,
    total: u64,
    progress: &'a mut dyn FnMut(Progress),
}

impl<'a> Steps<'a> {
    pub(crate) fn new(total: u64, progress: &'a mut dyn FnMut(Progress)) -> Self {
        Self {
            done: 0,
            total,
            progress,
        }
    }

    /// Reports that `what` runs now.
    pub(crate) fn show(&mut self, what: String) {
        (self.progress)(Progress {
            done: self.done,
            total: self.total,
            what,
        });
    }

    /// Counts `n` more steps as finished.
    pub(crate) fn finish(&mut self, n: u64) {
        self.done = (self.done + n).min(self.total);
    }

    /// Reports the end of the run.
    pub(crate) fn done(&mut self) {
        self.done = self.total;
        self.show("done".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_finished_steps_and_never_passes_the_total() {
        let mut seen = Vec::new();
        let mut hear = |p: Progress| seen.push((p.done, p.total, p.what));
        let mut steps = Steps::new(3, &mut hear);
        steps.show("a".into());
        steps.finish(1);
        steps.show("b".into());
        steps.show("b, round 2".into());
        steps.finish(5);
        steps.show("c".into());
        steps.done();
        let want = [(0, "a"), (1, "b"), (1, "b, round 2"), (3, "c"), (3, "done")];
        assert_eq!(seen.len(), want.len());
        for ((done, total, what), (d, w)) in seen.iter().zip(want) {
            assert_eq!((*done, *total, what.as_str()), (d, 3, w));
        }
    }
}
