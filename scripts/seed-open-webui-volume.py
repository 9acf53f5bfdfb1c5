"""Platform volume straight into a STOPPED Open WebUI's SQLite database (its DATA_DIR/webui.db).

    python seed-open-webui-volume.py DB SPEC.json     prints what it wrote, as JSON

Run by sandbox/seed-volume.ts, which builds the spec and keeps the database migrated by Open WebUI
itself (a first boot) before this writes into it. The rows are what Open WebUI 0.12.4 and 0.11.4
write for the same objects (models/users.py, auths.py, files.py, chats.py, chat_messages.py,
tags.py, feedbacks.py), read from their installed source: users with their auth rows (the
trusted-header sign-in finds a user by email), files with their extracted text in `data`, chats
with a message history, `meta.tags`, a `tag` row per user and name and a `chat_message` row per
message (what the analytics read), ratings with the rated chat as their snapshot.

Everything is derived from the spec's seed: the same spec writes the same rows. Nothing else in the
database is touched; Open WebUI must not be running (SQLite would be written under it).
"""

import json
import random
import sqlite3
import sys
import time
import uuid

WORDS = (
    'alpha beta gamma delta river stone cloud ember maple orbit pixel quartz saffron tundra velvet '
    'willow zephyr harbor lantern meadow nectar opal prairie quiver rustic summit timber umber'
).split()


POOL = []


def text_of(rng, size):
    """`size` bytes of words: a slice of one pool of words (made once; slicing is what keeps seeding fast)."""
    if not POOL:
        POOL.append(' '.join(rng.choice(WORDS) for _ in range(400_000)))
    pool = POOL[0]
    if size >= len(pool):
        return (pool * (size // len(pool) + 1))[:size]
    at = rng.randrange(len(pool) - size)
    return pool[at : at + size]


def new_id(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def chat_body(rng, title, model, tags, size, t0):
    """A chat as the front-end stores it: a linear history of user/assistant pairs, about `size` bytes."""
    pairs = max(1, size // 2000)
    per = max(20, size // (pairs * 2))
    messages, parent, order = {}, None, []
    for k in range(pairs * 2):
        mid = new_id(rng)
        role = 'user' if k % 2 == 0 else 'assistant'
        m = {
            'id': mid,
            'parentId': parent,
            'childrenIds': [],
            'role': role,
            'content': text_of(rng, per),
            'timestamp': t0 + k,
        }
        if role == 'assistant':
            m['model'] = model
            m['modelName'] = model
            m['done'] = True
        else:
            m['models'] = [model]
        if parent:
            messages[parent]['childrenIds'].append(mid)
        messages[mid] = m
        order.append(mid)
        parent = mid
    return {
        'title': title,
        'models': [model],
        'tags': tags,
        'history': {'currentId': parent, 'messages': messages},
        'messages': [],
        'timestamp': t0 * 1000,
    }, [messages[i] for i in order]


class Tables:
    """Inserts rows given as dicts, with the columns this release's table has (0.11.4 has fewer)."""

    def __init__(self, con):
        self.con = con
        self.columns = {}

    def insert(self, table, rows):
        if not rows:
            return
        if table not in self.columns:
            self.columns[table] = {r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')}
        have = self.columns[table]
        missing = [k for k in rows[0] if k not in have and k in REQUIRED.get(table, ())]
        if missing:
            raise SystemExit(f'table {table} has no column {missing}: not a release this seeder knows')
        keys = [k for k in rows[0] if k in have]
        sql = f'INSERT INTO "{table}" ({", ".join(keys)}) VALUES ({", ".join("?" for _ in keys)})'
        self.con.executemany(sql, [tuple(r[k] for k in keys) for r in rows])


# columns without which the rows would not be what the views read
REQUIRED = {
    'user': ('id', 'email', 'role'),
    'auth': ('id', 'email', 'active'),
    'file': ('id', 'user_id', 'filename', 'data', 'meta', 'created_at', 'updated_at'),
    'chat': ('id', 'user_id', 'chat', 'meta', 'created_at', 'updated_at', 'archived'),
    'chat_message': ('id', 'chat_id', 'user_id', 'role', 'model_id', 'created_at'),
    'tag': ('id', 'name', 'user_id'),
    'feedback': ('id', 'user_id', 'data', 'meta', 'snapshot', 'created_at', 'updated_at'),
    'model': ('id', 'user_id', 'base_model_id', 'meta'),
}


def main():
    db_path, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    rng = random.Random(spec['seed'])
    now = int(spec.get('now') or time.time())
    day = 86400
    models = spec['models']
    started = time.time()

    con = sqlite3.connect(db_path)
    con.execute('PRAGMA synchronous=OFF')
    con.execute('PRAGMA journal_mode=WAL')
    t = Tables(con)
    counts = {'users': 0, 'files': 0, 'chats': 0, 'messages': 0, 'tags': 0, 'ratings': 0}
    sizes = {'chats': 0, 'snapshots': 0}

    for u in spec['users']:
        uid = u['id']
        created = now - 200 * day
        t.insert(
            'user',
            [
                {
                    'id': uid,
                    'name': u['name'],
                    'email': u['email'].lower(),
                    'role': u['role'],
                    'profile_image_url': '/user.png',
                    'last_active_at': now,
                    'updated_at': created,
                    'created_at': created,
                }
            ],
        )
        # no password: the platform signs users in by trusted headers only
        t.insert('auth', [{'id': uid, 'email': u['email'].lower(), 'password': '!', 'active': 1}])
        counts['users'] += 1

        # ---- workspace models they own (models/models.py: a stored model on the connection's), no grants
        t.insert(
            'model',
            [
                {
                    'id': mid,
                    'user_id': uid,
                    'base_model_id': models[0],
                    'name': mid,
                    'params': '{}',
                    'meta': json.dumps({'description': f"{u['prefix']}'s model", 'tags': [{'name': f"{u['prefix']}-model-tag"}]}),
                    'updated_at': created,
                    'created_at': created,
                    'is_active': 1,
                }
                for mid in u.get('models', [])
            ],
        )

        # ---- files (models/files.py insert_new_file, then the processed text in `data`)
        rows = []
        for k in range(u.get('files', 0)):
            fid = new_id(rng)
            name = f"{u['prefix']}-file-{k:06d}.{rng.choice(['txt', 'md', 'csv'])}"
            created_at = now - rng.randrange(180 * day)
            # some files change after the upload (renamed, processed again): the list's order is updated_at
            updated_at = created_at + (rng.randrange(30 * day) if rng.random() < u.get('updatedShare', 0.1) else 0)
            content = text_of(rng, u.get('fileBytes', 300))
            rows.append(
                {
                    'id': fid,
                    'user_id': uid,
                    'filename': name,
                    'meta': json.dumps({'name': name, 'content_type': 'text/plain', 'size': len(content), 'data': {}}),
                    'created_at': created_at,
                    'hash': uuid.UUID(int=rng.getrandbits(128)).hex * 2,
                    'data': json.dumps({'status': 'completed', 'content': content}),
                    'updated_at': updated_at,
                    'path': f'/nonexistent/uploads/{fid}_{name}',
                }
            )
        t.insert('file', rows)
        counts['files'] += len(rows)

        # ---- chats, their tags and messages (models/chats.py insert_new_chat, chat_messages.py)
        tag_names = u.get('tags', [])
        used_tags = set()
        chat_ids = []
        chats, messages = [], []
        for k in range(u.get('chats', 0)):
            cid = new_id(rng)
            model = models[k % len(models)]
            tags = sorted(set(rng.sample(tag_names, min(len(tag_names), rng.randrange(0, 3))))) if tag_names else []
            used_tags.update(tags)
            t0 = now - rng.randrange(180 * day)
            body, listed = chat_body(rng, f"{u['prefix']} chat {k}", model, tags, u.get('chatBytes', 1500), t0)
            text = json.dumps(body)
            sizes['chats'] += len(text)
            chats.append(
                {
                    'id': cid,
                    'user_id': uid,
                    'title': body['title'],
                    'created_at': t0,
                    'updated_at': t0 + 60,
                    'archived': 1 if rng.random() < 0.05 else 0,
                    'chat': text,
                    'pinned': 0,
                    'meta': json.dumps({'tags': tags}),
                    'last_read_at': t0 + 60,
                    'current_message_id': body['history']['currentId'],
                    'variables': '{}',
                }
            )
            for m in listed:
                messages.append(
                    {
                        'id': f'{cid}-{m["id"]}',
                        'chat_id': cid,
                        'user_id': uid,
                        'role': m['role'],
                        'parent_id': m['parentId'],
                        'content': json.dumps(m['content']),
                        'model_id': m.get('model'),
                        'done': 1,
                        'created_at': m['timestamp'],
                        'updated_at': t0 + 60,
                    }
                )
            chat_ids.append(cid)
        t.insert('chat', chats)
        t.insert('chat_message', messages)
        t.insert('tag', [{'id': n.replace(' ', '_').lower(), 'name': n, 'user_id': uid, 'meta': None} for n in sorted(used_tags)])
        counts['chats'] += len(chats)
        counts['messages'] += len(messages)
        counts['tags'] += len(used_tags)

        # ---- ratings (models/feedbacks.py insert_new_feedback): an arena comparison, the chat as snapshot
        rating_tags = u.get('ratingTags', tag_names)
        rows = []
        for k in range(u.get('ratings', 0)):
            model = models[k % len(models)]
            data = {
                'rating': rng.choice([1, -1]),
                'model_id': model,
                'sibling_model_ids': [models[(k + 1) % len(models)]],
                'reason': '',
                'comment': '',
                'tags': sorted(set(rng.sample(rating_tags, min(len(rating_tags), 2)))) if rating_tags else [],
            }
            chat_ref = chat_ids[k % len(chat_ids)] if chat_ids else new_id(rng)
            snap = json.dumps({'chat': {'id': chat_ref, 'title': f"{u['prefix']} rated chat {k}", 'chat': {'text': text_of(rng, u.get('snapshotBytes', 2000))}}})
            sizes['snapshots'] += len(snap)
            at = now - rng.randrange(60 * day)
            rows.append(
                {
                    'id': new_id(rng),
                    'user_id': uid,
                    'version': 0,
                    'type': 'rating',
                    'data': json.dumps(data),
                    'meta': json.dumps({'arena': True, 'chat_id': chat_ref, 'message_id': new_id(rng), 'tags': data['tags']}),
                    'snapshot': snap,
                    'created_at': at,
                    'updated_at': at + (rng.randrange(day) if rng.random() < 0.25 else 0),
                }
            )
        t.insert('feedback', rows)
        counts['ratings'] += len(rows)

    con.commit()
    con.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    con.close()
    print(json.dumps({'counts': counts, 'bytes': sizes, 'seconds': round(time.time() - started, 2)}))


if __name__ == '__main__':
    main()
