//! The next block of an order-number counter, by period.

/// A block of counter values for one period: `start ..= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterBlock {
    pub period: i64,
    pub start: i64,
    pub end: i64,
}

/// The period's counter is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the counter of period {period} is full")]
pub struct Overflow {
    pub period: i64,
}

/// The next block of counter values. The catalog stores the latest period and the highest
/// value reserved in it; a block is never for an earlier period than the stored one (the
/// period never moves backwards), and a later period starts again at 1.
///
/// `clock_period` is the period the clock is in. When it is behind the stored period (the
/// clock stepped back, local time fell back an hour, the template moved to a zone further
/// west), numbers go on in the stored period and, once it is full, in the periods after it
/// (`after` gives the key of the period after a key; `None`: a template without periods):
/// calls never fail for hours because local time repeats, and no period is ever re-entered.
/// A full period that the clock is in is [`Overflow`]: its numbers are used up.
pub fn counter_block(
    stored: (i64, i64),
    want_period: i64,
    clock_period: i64,
    size: i64,
    capacity: i64,
    after: impl Fn(i64) -> Option<i64>,
) -> Result<CounterBlock, Overflow> {
    let (stored_period, stored_max) = stored;
    let mut period = stored_period.max(want_period);
    let mut base = if period == stored_period { stored_max.max(0) } else { 0 };
    if base >= capacity {
        match after(period) {
            Some(next) if period > clock_period && next > period => {
                period = next;
                base = 0;
            }
            _ => return Err(Overflow { period }),
        }
    }
    let end = base.saturating_add(size.max(1)).min(capacity);
    Ok(CounterBlock { period, start: base + 1, end })
}
