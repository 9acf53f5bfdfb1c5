// An admin's own ratings ordered and paged as Open WebUI 0.12.4 orders every user's
// (policies/ratings.ts; models/feedbacks.py get_feedback_items, SQLite's ordering of JSON values).
import { expect } from 'chai';
import { ratingIds, ratingKeys, ratingsPage, ratingsPageNumber, type RatingKeys } from '../../policies/ratings.js';

const r = (id: string, createdAt: number, updatedAt: number, modelId: unknown, rating: unknown): RatingKeys => ({
  id,
  userId: 'me',
  createdAt,
  updatedAt,
  modelId,
  rating,
  tags: [],
});

const ratings = [r('a', 10, 50, 'm-2', 1), r('b', 20, 20, 'm-1', -1), r('c', 30, 60, undefined, '1'), r('d', 40, 40, 'm-1', null), r('e', 25, 60, 7, true)];
const ids = (rs: RatingKeys[]) => rs.map((x) => x.id);

describe('policies/ratings.ts: the admin\u2019s own ratings, as Open WebUI orders every user\u2019s', () => {
  it('no order, no filter: newest made first', () => {
    expect(ids(ratingsPage(ratings, { page: 1 }).items)).to.deep.equal(['d', 'c', 'e', 'b', 'a']);
  });

  it('updated_at, either direction; equal keys in the order they were stored (oldest first)', () => {
    expect(ids(ratingsPage(ratings, { orderBy: 'updated_at', direction: 'desc', page: 1 }).items)).to.deep.equal(['e', 'c', 'a', 'd', 'b']);
    expect(ids(ratingsPage(ratings, { orderBy: 'updated_at', direction: 'asc', page: 1 }).items)).to.deep.equal(['b', 'd', 'a', 'e', 'c']);
    // any direction but asc is descending
    expect(ids(ratingsPage(ratings, { orderBy: 'updated_at', direction: 'up', page: 1 }).items)).to.deep.equal(['e', 'c', 'a', 'd', 'b']);
  });

  it('model_id and rating as SQLite orders JSON values: NULL, then numbers (true is 1), then text', () => {
    expect(ids(ratingsPage(ratings, { orderBy: 'model_id', direction: 'asc', page: 1 }).items)).to.deep.equal(['c', 'e', 'b', 'd', 'a']);
    expect(ids(ratingsPage(ratings, { orderBy: 'rating', direction: 'asc', page: 1 }).items)).to.deep.equal(['d', 'b', 'a', 'e', 'c']);
  });

  it('a filter without a known order, or the rater\u2019s name (theirs alone): the stored order', () => {
    expect(ids(ratingsPage(ratings, { orderBy: 'username', direction: 'desc', page: 1 }).items)).to.deep.equal(['a', 'b', 'e', 'c', 'd']);
    expect(ids(ratingsPage(ratings, { modelId: 'm-1', page: 1 }).items)).to.deep.equal(['b', 'd']);
  });

  it('model_id an exact match of a string; total counts the matching; 30 a page', () => {
    expect(ratingsPage(ratings, { modelId: '7', page: 1 }).total).to.equal(0);
    const many = Array.from({ length: 75 }, (_, i) => r(`x${i}`, i, i, 'm', 1));
    const p3 = ratingsPage(many, { page: 3 });
    expect(p3.total).to.equal(75);
    expect(ids(p3.items)).to.deep.equal(['x14', 'x13', 'x12', 'x11', 'x10', 'x9', 'x8', 'x7', 'x6', 'x5', 'x4', 'x3', 'x2', 'x1', 'x0']);
    expect(ratingsPage(many, { page: 4 }).items).to.deep.equal([]);
  });

  it('the ids: newest change first', () => {
    expect(ratingIds(ratings).map((x) => x.id)).to.deep.equal(['e', 'c', 'a', 'd', 'b']);
    expect(Object.keys(ratingIds(ratings)[0]!)).to.deep.equal(['id', 'user_id', 'created_at', 'updated_at']);
  });

  it('a page as Optional[int] takes it: below 1 is 1, not a whole number is refused', () => {
    expect([undefined, '3', ' 3 ', '+3', '0', '-4', 'x', '1.5', ''].map(ratingsPageNumber)).to.deep.equal([1, 3, 3, 3, 1, 1, undefined, undefined, undefined]);
  });

  it('a record that is not a rating has no keys (the answer is refused)', () => {
    expect(ratingKeys({ id: 'a', user_id: 'me', created_at: 1 })).to.equal(undefined);
    expect(ratingKeys([])).to.equal(undefined);
    expect(ratingKeys({ id: 'a', user_id: 'me', created_at: 1, updated_at: 2, data: { model_id: 'm', tags: ['t'] } })).to.include({ modelId: 'm' });
  });
});
