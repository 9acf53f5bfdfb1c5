// policies/origins.ts: cross-site rules for cookie-carrying requests.
import { expect } from 'chai';
import { signOutRequest, stateChangeOrigin, websocketOrigin } from '../../policies/origins.js';

const ours = ['https://chat.example', 'https://alt.example'];

describe('unit: origin rules', () => {
  it('a state change (tenant switch): no Origin or one of ours passes; another site, null or a look-alike is 403', () => {
    expect(stateChangeOrigin(undefined, ours).allow).to.equal(true);
    expect(stateChangeOrigin('https://alt.example', ours).allow).to.equal(true);
    for (const o of ['https://evil.example', 'null', 'https://chat.example.evil', 'http://chat.example', 'https://CHAT.example', '']) {
      expect(stateChangeOrigin(o, ours), o).to.deep.include({ allow: false, status: 403, detail: 'Forbidden origin' });
    }
  });
  it('sign-out: only a cross-site Sec-Fetch-Site is refused (older browsers send none)', () => {
    for (const method of ['GET', 'POST']) {
      expect(signOutRequest(method, 'cross-site', undefined, ours)).to.deep.include({ allow: false, status: 403, detail: 'Forbidden' });
      for (const v of [undefined, 'same-origin', 'same-site', 'none'])
        expect(signOutRequest(method, v, undefined, ours).allow, `${method} ${String(v)}`).to.equal(true);
    }
    // a POST naming another site's Origin is refused; a GET carries no Origin rule (older releases)
    expect(signOutRequest('POST', 'same-site', 'https://evil.example', ours)).to.deep.include({ allow: false, status: 403, detail: 'Forbidden origin' });
    expect(signOutRequest('POST', 'same-origin', ours[0], ours).allow).to.equal(true);
    expect(signOutRequest('GET', undefined, 'https://evil.example', ours).allow).to.equal(true);
  });
  it('WebSocket: a cookie session needs an Origin of ours, even none is refused', () => {
    expect(websocketOrigin('session', 'https://chat.example', ours).allow).to.equal(true);
    expect(websocketOrigin('session', undefined, ours).allow).to.equal(false);
    expect(websocketOrigin('session', 'https://evil.example', ours).allow).to.equal(false);
  });
  it('WebSocket: a bearer token without Origin passes; with an Origin, it must be ours', () => {
    expect(websocketOrigin('bearer', undefined, ours).allow).to.equal(true);
    expect(websocketOrigin('bearer', 'https://alt.example', ours).allow).to.equal(true);
    expect(websocketOrigin('bearer', 'https://evil.example', ours)).to.deep.include({ allow: false, status: 403 });
  });
});
