// The words of the gateway's own pages, in the languages they are written in.
import type { OAuthErrorKind } from './oauth-errors.js';

export type Lang = 'en' | 'de';

export interface Texts {
  signInTitle: string;
  chooseProvider: string;
  signInWith: (name: string) => string;
  signIn: string;
  noProviders: string;
  welcomeTitle: string;
  welcomeText: string;
  adminLogin: string;
  linkUnavailableTitle: string;
  linkUnavailableText: string;
  toGenericPage: string;
  catalogDownTitle: string;
  catalogDownText: string;
  sessionCheckDownTitle: string;
  sessionCheckDownText: string;
  sessionRenewalDownTitle: string;
  sessionRenewalDownText: string;
  chatDownTitle: string;
  chatDownText: string;
  chatSlowTitle: string;
  chatSlowText: string;
  tryAgain: string;
  signOutPendingTitle: string;
  signOutPendingText: string;
  providersLabel: string;
  signedInTitle: string;
  signedInAs: (name: string, email: string) => string;
  continueToChat: string;
  signOut: string;
  signInFailedTitle: string;
  signInFailedText: string;
  signInAgain: string;
  notFoundTitle: string;
  notFoundText: string;
  toSignIn: string;
  chatNotYoursTitle: string;
  chatNotYoursText: string;
  toYourChats: string;
  /** What the realm's error answer at the callback means for the user (OAuth 2.0 / OIDC error codes). */
  oauthErrors: Record<OAuthErrorKind, { title: string; text: string }>;
  errorCode: (code: string) => string;
  tenantNotMemberTitle: string;
  tenantNotMemberText: (linked: string, active: string | null) => string;
  releaseNotCheckedTitle: string;
  /** why: the release seen (`release`), or why it could not be read (`unread`) */
  releaseNotCheckedWhy: (release: string | undefined, unread: string | undefined) => string;
  releaseNotCheckedSince: (when: string) => string;
  releaseNotCheckedUsers: string;
  releaseNotCheckedTell: string;
  /** what the operator is told: the release, the checked ones, what to run */
  releaseNotCheckedMessage: (release: string | undefined, unread: string | undefined, checked: string) => string;
}

// What the admin passes on to the operator stays in English, the operators' docs' language, in every locale.
const operatorMessage: Texts['releaseNotCheckedMessage'] = (release, unread, checked) =>
  release
    ? `The gateway refuses administrators (UPSTREAM_RELEASE_POLICY=refuse-admins): Open WebUI ${release} is not a release its route table was checked against (${checked}). Check it with "npm run routes:check -- ${release}", or run a checked release.`
    : `The gateway refuses administrators (UPSTREAM_RELEASE_POLICY=refuse-admins): it cannot read Open WebUI's release from /api/version (${unread ?? 'unknown'}). See its /readyz and its log (upstream-release-unsupported).`;

export const TEXTS: Record<Lang, Texts> = {
  en: {
    signInTitle: 'Sign in',
    chooseProvider: 'Choose how you want to sign in.',
    signInWith: (name) => `Sign in with ${name}`,
    signIn: 'Sign in',
    noProviders: 'No sign-in provider is offered here.',
    welcomeTitle: 'Welcome',
    welcomeText: 'Please sign in through the login link your organisation gave you.',
    adminLogin: 'Administrator login',
    linkUnavailableTitle: 'This sign-in link is not available',
    linkUnavailableText: 'The link may be mistyped, or its sign-in provider has been switched off. Ask your organisation for the current link.',
    toGenericPage: 'Go to the sign-in page',
    catalogDownTitle: 'Sign-in is temporarily unavailable',
    catalogDownText: 'The list of sign-in providers cannot be loaded right now. Please try again in a few minutes.',
    sessionCheckDownTitle: 'Your sign-in cannot be checked right now',
    sessionCheckDownText: 'The gateway cannot reach its session store. Nothing is lost: please try again in a few seconds.',
    sessionRenewalDownTitle: 'Your sign-in cannot be renewed right now',
    sessionRenewalDownText: 'The sign-in service does not answer the gateway. You are still signed in: please try again in a few seconds.',
    chatDownTitle: 'The chat is not available right now',
    chatDownText: 'The chat service cannot be reached. You are still signed in and nothing is lost: please try again in a few moments.',
    chatSlowTitle: 'The chat did not answer in time',
    chatSlowText: 'The chat service is busy or not answering. You are still signed in and nothing is lost: please try again in a few moments.',
    tryAgain: 'Try again',
    signOutPendingTitle: 'You are signed out in this browser',
    signOutPendingText:
      'Your sign-out is still being written to the session store that all servers of this service share: it did not confirm it in time. It is written as soon as the store answers, usually within seconds; until then, a copy of this sign-in taken from this browser could still be used at another server.',
    providersLabel: 'Sign-in providers',
    signedInTitle: 'You are signed in',
    signedInAs: (name, email) => `Signed in as ${name} (${email}).`,
    continueToChat: 'Continue to the chat',
    signOut: 'Sign out',
    signInFailedTitle: 'Sign-in did not complete',
    signInFailedText: 'This sign-in answer was already used, has expired or was not meant for this browser. Nothing was changed: please sign in again.',
    signInAgain: 'Sign in again',
    notFoundTitle: 'Page not found',
    notFoundText: 'There is no page at this address.',
    toSignIn: 'Go to the sign-in page',
    chatNotYoursTitle: 'This chat cannot be opened',
    chatNotYoursText: 'On this platform administrators open only their own chats. This chat belongs to another user, or it does not exist.',
    toYourChats: 'Go to your chats',
    oauthErrors: {
      access_denied: {
        title: 'Sign-in was cancelled',
        text: 'The sign-in was cancelled, or your sign-in service refused it (your account may not have access to this service). Nothing was changed.',
      },
      login_required: { title: 'Please sign in', text: 'Your sign-in service needs you to sign in again before you can continue.' },
      interaction_required: {
        title: 'Your sign-in service needs something from you',
        text: 'Your sign-in service needs you to do something first, for example accept its terms or finish setting up your account. Sign in again to do it.',
      },
      consent_required: {
        title: 'Consent needed',
        text: 'Your sign-in service needs your consent before it shares your name and email with this service. Sign in again and allow it.',
      },
      account_selection_required: {
        title: 'Choose an account',
        text: 'Your sign-in service needs you to choose which account to use. Sign in again and choose one.',
      },
      temporarily_unavailable: {
        title: 'Sign-in is temporarily unavailable',
        text: 'Your sign-in service is busy or down for maintenance. Please try again in a few minutes.',
      },
      server_error: {
        title: 'Your sign-in service had a problem',
        text: 'Your sign-in service ran into an error of its own. Please try again; if it keeps happening, tell your administrator.',
      },
      misconfigured: {
        title: 'Sign-in is not set up correctly',
        text: 'Your sign-in service refused the sign-in request of this service: it is set up wrongly. Please tell your administrator; signing in again will not help.',
      },
      other: {
        title: 'Sign-in did not complete',
        text: 'Your sign-in service reported an error. Please sign in again; if it keeps happening, tell your administrator.',
      },
    },
    errorCode: (code) => `Error code (for your administrator): ${code}`,
    tenantNotMemberTitle: 'Signed in, but not to the organisation of your link',
    tenantNotMemberText: (linked, active) =>
      `You signed in through the sign-in link of "${linked}", but your account is not a member of it.${active ? ` You are working in "${active}", your own organisation.` : ' You are working without an organisation.'}`,
    releaseNotCheckedTitle: 'The chat is closed to administrators for now',
    releaseNotCheckedWhy: (release, unread) =>
      release
        ? `The chat front-end now runs Open WebUI ${release}, a release this gateway was not checked against. Until it is, the gateway refuses administrators, so that rules written for another release cannot open other people's chats, files and notes to them.`
        : `The gateway cannot tell which release of Open WebUI the chat front-end runs (${unread ?? 'unknown'}). Until it can, it refuses administrators, so that rules written for another release cannot open other people's chats, files and notes to them.`,
    releaseNotCheckedSince: (when) => `Since ${when}.`,
    releaseNotCheckedUsers: 'People who are not administrators keep using the chat as before.',
    releaseNotCheckedTell: 'Tell the operator of the platform:',
    releaseNotCheckedMessage: operatorMessage,
  },
  de: {
    signInTitle: 'Anmelden',
    chooseProvider: 'Wählen Sie, wie Sie sich anmelden möchten.',
    signInWith: (name) => `Anmelden mit ${name}`,
    signIn: 'Anmelden',
    noProviders: 'Hier wird kein Anmeldeanbieter angeboten.',
    welcomeTitle: 'Willkommen',
    welcomeText: 'Bitte melden Sie sich über den Anmeldelink an, den Sie von Ihrer Organisation erhalten haben.',
    adminLogin: 'Anmeldung für Administratoren',
    linkUnavailableTitle: 'Dieser Anmeldelink ist nicht verfügbar',
    linkUnavailableText:
      'Der Link ist vielleicht falsch geschrieben, oder sein Anmeldeanbieter wurde abgeschaltet. Fragen Sie Ihre Organisation nach dem aktuellen Link.',
    toGenericPage: 'Zur Anmeldeseite',
    catalogDownTitle: 'Die Anmeldung ist vorübergehend nicht möglich',
    catalogDownText: 'Die Liste der Anmeldeanbieter kann gerade nicht geladen werden. Bitte versuchen Sie es in einigen Minuten erneut.',
    sessionCheckDownTitle: 'Ihre Anmeldung kann gerade nicht geprüft werden',
    sessionCheckDownText: 'Das Gateway erreicht seinen Sitzungsspeicher nicht. Es geht nichts verloren: bitte versuchen Sie es in einigen Sekunden erneut.',
    sessionRenewalDownTitle: 'Ihre Anmeldung kann gerade nicht erneuert werden',
    sessionRenewalDownText: 'Der Anmeldedienst antwortet dem Gateway nicht. Sie bleiben angemeldet: bitte versuchen Sie es in einigen Sekunden erneut.',
    chatDownTitle: 'Der Chat ist gerade nicht verfügbar',
    chatDownText:
      'Der Chat-Dienst ist nicht erreichbar. Sie bleiben angemeldet und es geht nichts verloren: bitte versuchen Sie es in einigen Augenblicken erneut.',
    chatSlowTitle: 'Der Chat hat nicht rechtzeitig geantwortet',
    chatSlowText:
      'Der Chat-Dienst ist ausgelastet oder antwortet nicht. Sie bleiben angemeldet und es geht nichts verloren: bitte versuchen Sie es in einigen Augenblicken erneut.',
    tryAgain: 'Erneut versuchen',
    signOutPendingTitle: 'Sie sind in diesem Browser abgemeldet',
    signOutPendingText:
      'Ihre Abmeldung wird noch in den Sitzungsspeicher geschrieben, den alle Server dieses Dienstes teilen: er hat sie nicht rechtzeitig bestätigt. Sie wird geschrieben, sobald er antwortet, meist innerhalb von Sekunden; bis dahin könnte eine Kopie dieser Anmeldung aus diesem Browser an einem anderen Server noch verwendet werden.',
    providersLabel: 'Anmeldeanbieter',
    signedInTitle: 'Sie sind angemeldet',
    signedInAs: (name, email) => `Angemeldet als ${name} (${email}).`,
    continueToChat: 'Weiter zum Chat',
    signOut: 'Abmelden',
    signInFailedTitle: 'Die Anmeldung wurde nicht abgeschlossen',
    signInFailedText:
      'Diese Anmeldeantwort wurde bereits verwendet, ist abgelaufen oder war nicht für diesen Browser bestimmt. Es wurde nichts geändert: bitte melden Sie sich erneut an.',
    signInAgain: 'Erneut anmelden',
    notFoundTitle: 'Seite nicht gefunden',
    notFoundText: 'Unter dieser Adresse gibt es keine Seite.',
    toSignIn: 'Zur Anmeldeseite',
    chatNotYoursTitle: 'Dieser Chat kann nicht geöffnet werden',
    chatNotYoursText: 'Auf dieser Plattform öffnen Administratoren nur ihre eigenen Chats. Dieser Chat gehört einer anderen Person oder existiert nicht.',
    toYourChats: 'Zu Ihren Chats',
    oauthErrors: {
      access_denied: {
        title: 'Die Anmeldung wurde abgebrochen',
        text: 'Die Anmeldung wurde abgebrochen oder von Ihrem Anmeldedienst abgelehnt (Ihr Konto hat vielleicht keinen Zugang zu diesem Dienst). Es wurde nichts geändert.',
      },
      login_required: { title: 'Bitte melden Sie sich an', text: 'Ihr Anmeldedienst verlangt, dass Sie sich erneut anmelden, bevor es weitergeht.' },
      interaction_required: {
        title: 'Ihr Anmeldedienst braucht etwas von Ihnen',
        text: 'Ihr Anmeldedienst verlangt zuerst einen Schritt von Ihnen, zum Beispiel seine Bedingungen zu akzeptieren oder Ihr Konto fertig einzurichten. Melden Sie sich erneut an, um ihn zu erledigen.',
      },
      consent_required: {
        title: 'Zustimmung nötig',
        text: 'Ihr Anmeldedienst braucht Ihre Zustimmung, bevor er Ihren Namen und Ihre E-Mail-Adresse an diesen Dienst weitergibt. Melden Sie sich erneut an und stimmen Sie zu.',
      },
      account_selection_required: {
        title: 'Wählen Sie ein Konto',
        text: 'Ihr Anmeldedienst verlangt, dass Sie das Konto wählen. Melden Sie sich erneut an und wählen Sie eines.',
      },
      temporarily_unavailable: {
        title: 'Die Anmeldung ist vorübergehend nicht möglich',
        text: 'Ihr Anmeldedienst ist ausgelastet oder wird gewartet. Bitte versuchen Sie es in einigen Minuten erneut.',
      },
      server_error: {
        title: 'Ihr Anmeldedienst hatte ein Problem',
        text: 'Bei Ihrem Anmeldedienst ist ein eigener Fehler aufgetreten. Bitte versuchen Sie es erneut; wenn es wieder passiert, wenden Sie sich an Ihre Administration.',
      },
      misconfigured: {
        title: 'Die Anmeldung ist falsch eingerichtet',
        text: 'Ihr Anmeldedienst hat die Anmeldeanfrage dieses Dienstes abgelehnt: er ist falsch eingerichtet. Bitte wenden Sie sich an Ihre Administration; eine erneute Anmeldung hilft nicht.',
      },
      other: {
        title: 'Die Anmeldung wurde nicht abgeschlossen',
        text: 'Ihr Anmeldedienst hat einen Fehler gemeldet. Bitte melden Sie sich erneut an; wenn es wieder passiert, wenden Sie sich an Ihre Administration.',
      },
    },
    errorCode: (code) => `Fehlercode (für Ihre Administration): ${code}`,
    tenantNotMemberTitle: 'Angemeldet, aber nicht bei der Organisation Ihres Links',
    tenantNotMemberText: (linked, active) =>
      `Sie haben sich über den Anmeldelink von „${linked}“ angemeldet, Ihr Konto gehört aber nicht dazu.${active ? ` Sie arbeiten in „${active}“, Ihrer eigenen Organisation.` : ' Sie arbeiten ohne Organisation.'}`,
    releaseNotCheckedTitle: 'Der Chat ist für Administratoren vorübergehend geschlossen',
    releaseNotCheckedWhy: (release, unread) =>
      release
        ? `Das Chat-Frontend läuft jetzt mit Open WebUI ${release}, einer Version, gegen die dieses Gateway nicht geprüft wurde. Bis es das ist, weist das Gateway Administratoren ab, damit Regeln für eine andere Version ihnen nicht die Chats, Dateien und Notizen anderer öffnen.`
        : `Das Gateway kann nicht feststellen, welche Version von Open WebUI das Chat-Frontend ausführt (${unread ?? 'unbekannt'}). Bis es das kann, weist es Administratoren ab, damit Regeln für eine andere Version ihnen nicht die Chats, Dateien und Notizen anderer öffnen.`,
    releaseNotCheckedSince: (when) => `Seit ${when}.`,
    releaseNotCheckedUsers: 'Wer kein Administrator ist, nutzt den Chat weiter wie bisher.',
    releaseNotCheckedTell: 'Sagen Sie dem Betrieb der Plattform:',
    releaseNotCheckedMessage: operatorMessage,
  },
};
