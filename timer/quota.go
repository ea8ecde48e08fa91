package timer

import "errors"

// ErrQuota means a tenant's quota refuses what was asked: the API's
// quota errors wrap it, and an occurrence of a schedule that the
// Materializer's Admit refuses with it is skipped (see
// MaterializerConfig.Admit).
var ErrQuota = errors.New("over quota")

// IsQuota reports whether err is a refusal by a quota (wraps ErrQuota).
func IsQuota(err error) bool { return errors.Is(err, ErrQuota) }

// SkipPendingQuota is the reason an occurrence refused by Admit is
// counted under (Observer.OccurrencesSkipped): the quota that holds
// occurrences back is the owner's max_pending.
const SkipPendingQuota = "pending_quota"

// skipReason is err's message cut to MaxSkipReasonBytes, on a rune
// boundary.
func skipReason(err error) string { return truncateUTF8(err.Error(), MaxSkipReasonBytes) }
