// Which keys of a record the streamed file filter (gateway/enforcement/file-stream-filter.ts) reads: only
// those that can be `user_id` or `id`, told by their first byte. A key whose first character is
// written as a \u escape, or whose first byte is in the next chunk, must still be read; the answer
// is the whole-document filter's (JSON.parse, parseFileList, keepOwn) wherever the body is cut.
import { expect } from 'chai';
import { FileFilterError, FileStreamFilter } from '../../gateway/enforcement/file-stream-filter.js';
import { keepOwn, parseFileList } from '../../policies/file-scoping.js';

const CALLER = 'alice';

/** The whole-document filter's answer, or undefined where it refuses the page. */
function whole(page: string): { json: unknown; kept: number; removed: number } | undefined {
  const list = parseFileList(JSON.parse(page));
  if (!list) return undefined;
  const { own, removed } = keepOwn(list.items, CALLER);
  return { json: { items: own, total: list.total }, kept: own.length, removed };
}

/** The streamed filter's answer for the page written in two chunks, cut at byte `cut`. */
function streamed(page: string, cut: number): { json: unknown; kept: number; removed: number } | undefined {
  const body = Buffer.from(page);
  const f = new FileStreamFilter('list', CALLER);
  try {
    f.write(Buffer.from(body.subarray(0, cut)));
    f.write(Buffer.from(body.subarray(cut)));
    const out = f.end();
    return { json: JSON.parse(out.body.toString('utf8')), kept: out.kept, removed: out.removed };
  } catch (err) {
    if (err instanceof FileFilterError) return undefined;
    throw err;
  }
}

describe('streamed file filter: the record keys it reads', () => {
  const pages = {
    'user_id with its first character escaped names the owner': '{"items":[{"id":"f1","\\u0075ser_id":"bob"},{"id":"f2","user_id":"alice"}],"total":2}',
    'id with its first character escaped makes a file': '{"items":[{"\\u0069d":"f1","user_id":"alice"}],"total":1}',
    'an escaped user_id after a plain one wins': '{"items":[{"id":"f1","user_id":"alice","\\u0075ser_id":"bob"}],"total":1}',
    'a plain user_id after an escaped one wins': '{"items":[{"id":"f1","\\u0075ser_id":"bob","user_id":"alice"}],"total":1}',
    'an escaped user_id that is not a string leaves no file': '{"items":[{"id":"f1","user_id":"alice","\\u0075ser_id":7}],"total":1}',
    'keys that start as user_id or id does are not taken for them':
      '{"items":[{"id":"f1","user_id":"alice","uid":"bob","identity":"bob","user":"bob","i":1,"u":"bob","":"bob"}],"total":1}',
    'keys of other letters are skipped, whatever their value': '{"items":[{"id":"f1","user_id":"alice","name":"x","meta":{"user_id":"bob","id":5}}],"total":1}',
  };
  for (const [name, page] of Object.entries(pages)) {
    it(`${name}, wherever the body is cut`, () => {
      const want = whole(page);
      for (let cut = 0; cut <= Buffer.byteLength(page); cut++) expect(streamed(page, cut), `cut at ${cut}`).to.deep.equal(want);
    });
  }
});
