// The gateway's own reads of Open WebUI's lists through the streamed filter
// (gateway/enforcement/file-stream-filter.ts): one answer filtered as it arrives, or every record of
// it handed to a reader and none kept. What the views share, so that each reads a list one way.
import type { Calls } from '../upstream/calls.js';
import { FileFilterError, FileStreamFilter, type FileAnswerShape, type FilteredFiles, type FilterOptions } from './file-stream-filter.js';
import { UpstreamError, type UpstreamResponse } from '../upstream/proxy.js';

type Headers = Record<string, string | string[] | undefined>;

/** One answer read through the streamed filter: `out` when it answered 200 (a body it refuses throws UpstreamError). */
export async function filteredAnswer(
  calls: Calls,
  shape: FileAnswerShape,
  pathAndQuery: string,
  headers: Headers,
  callerId: string,
  options: FilterOptions,
): Promise<{ up: UpstreamResponse; out?: FilteredFiles }> {
  const filter = new FileStreamFilter(shape, callerId, options);
  const up = await calls.call('GET', pathAndQuery, headers, undefined, (status) => (status === 200 ? filter : undefined));
  if (up.status !== 200) return { up };
  try {
    return { up, out: filter.end() };
  } catch (err) {
    if (err instanceof FileFilterError) throw new UpstreamError('bad-body', `${pathAndQuery.split('?')[0]} answer refused: ${err.message}`);
    throw err;
  }
}

/**
 * Every record of a list answer handed to `each` as it arrives (nothing kept); its `total`, if it
 * has one. Anything but a 200 whose list holds only records is an UpstreamError.
 */
export async function readRecords(
  calls: Calls,
  pathAndQuery: string,
  headers: Headers,
  each: (record: Record<string, unknown>, bytes: Buffer) => void,
  shape: FileAnswerShape = 'array',
): Promise<{ total: number }> {
  const { up, out } = await filteredAnswer(calls, shape, pathAndQuery, headers, '', {
    rule: (record, bytes) => {
      each(record, bytes);
      return false;
    },
  });
  const path = pathAndQuery.split('?')[0]!;
  if (up.status !== 200) throw new ListNotAnswered(path, up.status);
  if (out!.others > 0) throw new UpstreamError('bad-body', `${path} holds what is not a record`);
  return { total: out!.total };
}

/** A list read by `readRecords` answered another status than 200 (`answered`). */
export class ListNotAnswered extends UpstreamError {
  constructor(
    path: string,
    readonly answered: number,
  ) {
    super('bad-body', `${path} answered ${answered}`);
  }
}
