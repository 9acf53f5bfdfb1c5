// The audit stream records sign-ins and failed sign-ins (issue: operations), never tokens.
import { expect } from 'chai';
import { Jar, browse, signIn, startWorld, type World } from '../support/cookie-jar.js';

describe('sign-in audit events', function () {
  this.timeout(30_000);
  let w: World;
  before(async () => {
    w = await startWorld();
  });
  after(() => w.close());

  const audit = () => w.obs.lines.filter((l) => l.name === 'audit');

  it('a completed login is a sign-in event naming the user and admin flag', async () => {
    await signIn(w.url, 'sysadmin');
    const event = audit().find((l) => l.event === 'sign-in');
    expect(event).to.include({ admin: true });
    expect(String(event?.email)).to.match(/sysadmin/);
  });

  it('a forged or replayed callback is a sign-in-failed event, answered 400 without a stack', async () => {
    const jar = new Jar(w.url);
    const res = await browse(jar, `${w.url}/auth/callback?code=forged&state=forged`);
    expect(res.status).to.equal(400);
    expect(res.text).to.not.match(/at .*\.(js|ts):\d+/);
    const failed = audit().filter((l) => l.event === 'sign-in-failed');
    expect(failed).to.have.length.greaterThan(0);
    const text = JSON.stringify(w.obs.lines);
    expect(text).to.not.include('forged&state');
  });
});
