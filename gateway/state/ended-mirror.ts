// The ended sessions one instance knows of: the whole truth without Redis, a mirror of Redis's ZSET
// with it (so the check made on every request is a map lookup, not a round trip).
import type { EndedBy, SessionFacts } from './shared-state.js';

/** The ended sessions this instance knows of, by member; swept of what can no longer matter. */
export class EndedMirror {
  private readonly members = new Map<string, number>();
  /** per subject: every session begun at or before `before` has ended */
  private readonly subjects = new Map<string, { before: number; until: number }>();

  static member(by: EndedBy): string {
    if ('id' in by) return `id:${by.id}`;
    if ('sid' in by) return `sid:${by.sid}`;
    return `sub:${Math.floor(by.before)}:${by.sub}`;
  }

  add(member: string, until: number): void {
    if (member.startsWith('sub:')) {
      const colon = member.indexOf(':', 4);
      const before = Number(member.slice(4, colon));
      const sub = member.slice(colon + 1);
      if (colon < 0 || !Number.isFinite(before)) return;
      const had = this.subjects.get(sub);
      this.subjects.set(sub, { before: Math.max(before, had?.before ?? 0), until: Math.max(until, had?.until ?? 0) });
      return;
    }
    this.members.set(member, Math.max(until, this.members.get(member) ?? 0));
  }

  has(s: SessionFacts, now: number): boolean {
    const live = (until: number | undefined) => until !== undefined && until > now;
    if (live(this.members.get(`id:${s.id}`))) return true;
    if (s.sid && live(this.members.get(`sid:${s.sid}`))) return true;
    const subject = this.subjects.get(s.sub);
    return !!subject && subject.until > now && s.iat <= subject.before;
  }

  /** Every entry as a member and its `until` (to write them back to a Redis that lost them). */
  *entries(): Generator<[string, number]> {
    yield* this.members;
    for (const [sub, v] of this.subjects) yield [`sub:${v.before}:${sub}`, v.until];
  }

  sweep(now: number): void {
    for (const [k, until] of this.members) if (until <= now) this.members.delete(k);
    for (const [k, v] of this.subjects) if (v.until <= now) this.subjects.delete(k);
  }

  get size(): number {
    return this.members.size + this.subjects.size;
  }
}
