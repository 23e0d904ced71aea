"""The web client in a real headless Chromium, driven by Playwright (pinned in
tests/requirements-browser.txt). Started by tests/it/web.rs against a fresh server:

    python tests/browser/flows.py BASE_URL ARTIFACT_DIR

Each flow is a function; the first failure stops the run with its name and the reason, and the
exit status is non-zero. Screenshots of the main pages at desktop and phone width go into
ARTIFACT_DIR, with the axe-core report of any page that has a serious or critical violation.
"""

import base64
import hashlib
import hmac
import os
import struct
import sys
import time

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect, sync_playwright

BASE = sys.argv[1].rstrip("/")
ARTIFACTS = sys.argv[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PASSWORD = "correct horse battery staple"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 812}
AXE = Axe()

# The browser's own background traffic would hit this machine's closed network.
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

csp_errors = []


def new_context(browser, javascript=True, viewport=DESKTOP, locale="en-GB"):
    context = browser.new_context(java_script_enabled=javascript, viewport=viewport, locale=locale)
    context.set_default_timeout(10_000)
    return context


def watch(page):
    def on_console(msg):
        if "Content Security Policy" in msg.text or "Refused to" in msg.text:
            csp_errors.append(f"{page.url}: {msg.text}")
    page.on("console", on_console)
    page.on("dialog", lambda dialog: dialog.accept())
    return page


def shot(page, name):
    page.screenshot(path=os.path.join(ARTIFACTS, f"{name}.png"), full_page=True)


def check_accessibility(page, name):
    results = AXE.run(page)
    bad = [v for v in results.response["violations"] if v.get("impact") in ("serious", "critical")]
    if bad:
        with open(os.path.join(ARTIFACTS, f"axe-{name}.txt"), "w") as out:
            out.write(results.generate_report())
        ids = ", ".join(f"{v['id']} ({v['impact']}: {len(v['nodes'])} nodes)" for v in bad)
        raise AssertionError(f"axe-core on {name}: {ids}")


def register(page, username):
    page.goto(f"{BASE}/register")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Email").fill(f"{username}@example.org")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("heading", name="Home", exact=True)).to_be_visible()


def sign_in(page, username, password=PASSWORD):
    page.goto(f"{BASE}/login")
    page.locator("#identifier").fill(username)
    page.locator("#password").fill(password)
    page.locator("form[action='/login'] button[type=submit]").click()


def create_contact(page, first, last, emails=(), phone="", org="", birthday=""):
    page.goto(f"{BASE}/contacts/new")
    page.get_by_label("First name").fill(first)
    page.get_by_label("Last name").fill(last)
    for i, email in enumerate(emails):
        page.locator(f"#email-{i}").fill(email)
    if phone:
        page.locator("#phone-0").fill(phone)
    if org:
        page.get_by_label("Organization").fill(org)
    if birthday:
        page.get_by_label("Birthday").fill(birthday)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name=f"{first} {last}")).to_be_visible()
    return int(page.url.split("/contacts/")[1].split("?")[0].split("#")[0])


def totp(secret_b32, at=None):
    key = base64.b32decode(secret_b32 + "=" * (-len(secret_b32) % 8), casefold=True)
    counter = int((at or time.time()) // 30)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    code = (struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000
    return f"{code:06d}"


def flow_first_user_is_admin_and_manages_contacts(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    register(page, "ada")
    expect(page.get_by_role("link", name="Admin")).to_be_visible()
    expect(page.get_by_text("Welcome! Your account is ready.")).to_be_visible()

    grace = create_contact(page, "Grace", "Hopper", emails=["grace@navy.mil", "amazing@grace.org"],
                           phone="+1 555 0100", org="US Navy", birthday="1906-12-09")
    expect(page.get_by_role("link", name="grace@navy.mil")).to_be_visible()
    expect(page.get_by_role("link", name="amazing@grace.org")).to_be_visible()
    expect(page.get_by_text("+1 555 0100")).to_be_visible()

    # Edit keeps what the form does not show and changes what it does.
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("Organization")).to_have_value("US Navy")
    page.get_by_label("Organization").fill("Eckert-Mauchly")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    expect(page.get_by_text("Eckert-Mauchly")).to_be_visible()
    expect(page.get_by_role("link", name="amazing@grace.org")).to_be_visible()

    # A note and a reminder due today, then completed from the dashboard.
    page.get_by_placeholder("What did you talk about?").fill("Talked about COBOL and nanoseconds.")
    page.get_by_role("button", name="Add note").click()
    expect(page.get_by_text("Talked about COBOL and nanoseconds.")).to_be_visible()
    page.get_by_label("Reminder", exact=True).fill("Send the nanosecond wire")
    page.get_by_role("button", name="Add reminder").click()
    expect(page.locator("#h-reminders + ul").get_by_text("Send the nanosecond wire")).to_be_visible()
    page.goto(f"{BASE}/")
    item = page.locator("li", has_text="Send the nanosecond wire")
    expect(item).to_be_visible()
    item.get_by_role("button", name="Done").click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    expect(page.locator("li", has_text="Send the nanosecond wire")).to_have_count(0)

    for i, (first, last) in enumerate([("Alan", "Turing"), ("Ada", "Lovelace"), ("Katherine", "Johnson")]):
        create_contact(page, first, last, emails=[f"{first.lower()}@example.org"])

    # A relationship, found by name, then the network picture.
    page.goto(f"{BASE}/contacts/{grace}")
    page.locator("summary", has_text="Add a relationship").click()
    page.get_by_label("With").fill("lovelace")
    page.get_by_label("Who they are to each other").fill("colleague")
    page.locator("form[action$='/relationships'] button").click()
    expect(page.locator("#h-relationships ~ ul").first.get_by_role("link", name="Ada Lovelace")).to_be_visible()
    page.get_by_role("link", name="The network").click()
    expect(page.locator("svg.network circle")).to_have_count(2)
    check_accessibility(page, "network")
    shot(page, "desktop-network")

    # Search as you type: results change without pressing a button.
    page.goto(f"{BASE}/contacts")
    expect(page.locator("#contact-results li")).to_have_count(4)
    page.get_by_label("Find in contacts").press_sequentially("lovel", delay=30)
    expect(page.locator("#contact-results li")).to_have_count(1)
    expect(page.locator("#contact-results")).to_contain_text("Ada Lovelace")
    assert "q=lovel" in page.url, page.url

    # The global search marks what matched.
    page.get_by_placeholder("Search people, notes…").fill("nanoseconds")
    page.get_by_placeholder("Search people, notes…").press("Enter")
    expect(page.locator("mark", has_text="nanoseconds")).to_be_visible()

    for name, path in [("dashboard", "/"), ("contacts", "/contacts"), ("contact", f"/contacts/{grace}"),
                       ("contact-edit", f"/contacts/{grace}/edit"), ("search", "/search?q=grace"),
                       ("reminders", "/reminders"), ("settings", "/settings")]:
        page.goto(f"{BASE}{path}")
        check_accessibility(page, name)
        shot(page, f"desktop-{name}")
    phone = watch(context.new_page())
    phone.set_viewport_size(PHONE)
    for name, path in [("dashboard", "/"), ("contacts", "/contacts"), ("contact", f"/contacts/{grace}")]:
        phone.goto(f"{BASE}{path}")
        shot(phone, f"phone-{name}")
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{name} is {width}px wide on a {PHONE['width']}px phone"

    # Delete asks first (the dialog is accepted), then the contact is gone.
    page.goto(f"{BASE}/contacts?q=katherine")
    page.get_by_role("link", name="Katherine Johnson").click()
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_text("Deleted.")).to_be_visible()
    expect(page.get_by_role("link", name="Katherine Johnson")).to_have_count(0)

    # Signed out, the pages send you to sign in, and back where you were afterwards.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("You are signed out.")).to_be_visible()
    page.goto(f"{BASE}/contacts/{grace}")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    check_accessibility(page, "login")
    shot(page, "desktop-login")
    page.get_by_label("Username or email").fill("ada")
    page.get_by_label("Password").fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not right")
    expect(page.get_by_label("Username or email")).to_have_value("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Grace Hopper")).to_be_visible()
    context.close()
    return grace


def flow_second_user_sees_nothing_of_the_first(browser, grace):
    context = new_context(browser)
    page = watch(context.new_page())
    register(page, "bob")
    expect(page.get_by_role("link", name="Admin")).to_have_count(0)
    page.goto(f"{BASE}/contacts")
    expect(page.get_by_text("No contacts match.")).to_be_visible()
    response = page.goto(f"{BASE}/contacts/{grace}")
    assert response.status == 404, response.status
    response = page.goto(f"{BASE}/contacts/{grace}/edit")
    assert response.status == 404, response.status
    page.goto(f"{BASE}/search?q=Hopper")
    expect(page.get_by_text("Nothing matches.")).to_be_visible()
    page.goto(f"{BASE}/search?q=nanoseconds")
    expect(page.get_by_text("Nothing matches.")).to_be_visible()
    page.goto(f"{BASE}/")
    expect(page.get_by_text("Grace")).to_have_count(0)
    page.goto(f"{BASE}/reminders")
    expect(page.get_by_text("nanosecond")).to_have_count(0)
    context.close()


def flow_without_javascript(browser):
    context = new_context(browser, javascript=False)
    page = context.new_page()
    sign_in(page, "bob")
    expect(page.get_by_role("heading", name="Home", exact=True)).to_be_visible()
    create_contact(page, "Margaret", "Hamilton", emails=["margaret@mit.edu"], org="MIT")
    page.get_by_role("link", name="Edit").click()
    page.locator("#email-1").fill("mh@apollo.nasa.gov")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("link", name="mh@apollo.nasa.gov")).to_be_visible()
    # The list filter and the search work as plain forms.
    page.goto(f"{BASE}/contacts")
    page.get_by_label("Find in contacts").fill("hamilton")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#contact-results")).to_contain_text("Margaret Hamilton")
    page.goto(f"{BASE}/search?q=apollo")
    expect(page.locator("mark").first).to_be_visible()
    # A bad birthday sends the form back with the field named and what was typed kept.
    page.goto(f"{BASE}/contacts/new")
    page.get_by_label("First name").fill("Typo")
    page.get_by_label("Birthday").fill("31.02.1990")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("alert")).to_contain_text("birthday")
    expect(page.get_by_label("First name")).to_have_value("Typo")
    expect(page.get_by_label("Birthday")).to_have_value("31.02.1990")
    context.close()


VCARDS = """BEGIN:VCARD\r
VERSION:3.0\r
N:Hamilton;Margaret;;;\r
FN:Margaret Hamilton\r
EMAIL;TYPE=INTERNET:margaret@mit.edu\r
TEL;TYPE=CELL:+1 617 555 0199\r
END:VCARD\r
BEGIN:VCARD\r
VERSION:3.0\r
N:Easley;Annie;;;\r
FN:Annie Easley\r
EMAIL;TYPE=INTERNET:annie@nasa.gov\r
END:VCARD\r
"""

CSV = "First Name,Last Name,E-mail 1 - Value\nDorothy,Vaughan,dorothy@nasa.gov\nMary,Jackson,mary@nasa.gov\n"


def flow_import(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "bob")
    page.get_by_role("link", name="Import & export").click()
    check_accessibility(page, "import")
    page.set_input_files("#file", files=[{"name": "phone.vcf", "mimeType": "text/vcard", "buffer": VCARDS.encode()}])
    page.get_by_role("button", name="Upload and review").click()
    expect(page.get_by_role("heading", name="Review the import")).to_be_visible()
    check_accessibility(page, "import-preview")
    shot(page, "desktop-import-preview")
    margaret = page.locator("tr", has_text="margaret@mit.edu")
    expect(margaret.get_by_role("link", name="Margaret Hamilton")).to_be_visible()
    expect(margaret).to_contain_text("617")
    margaret.get_by_role("combobox").select_option("update")
    page.locator("tr", has_text="annie@nasa.gov").get_by_role("combobox").select_option("add")
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text("1 added, 1 updated, 0 skipped, 0 with problems.")).to_be_visible()
    page.goto(f"{BASE}/contacts?q=margaret")
    page.get_by_role("link", name="Margaret Hamilton").click()
    expect(page.get_by_text("+1 617 555 0199")).to_be_visible()
    expect(page.get_by_role("link", name="mh@apollo.nasa.gov")).to_be_visible()

    # A CSV with Google's headers: the columns come matched, the bulk choice adds them all.
    page.goto(f"{BASE}/import")
    page.set_input_files("#file", files=[{"name": "google.csv", "mimeType": "text/csv", "buffer": CSV.encode()}])
    page.get_by_role("button", name="Upload and review").click()
    expect(page.get_by_role("heading", name="Match the columns")).to_be_visible()
    expect(page.get_by_label("Field for column First Name")).to_have_value("firstname")
    page.get_by_role("button", name="Review the contacts").click()
    page.get_by_label("Add the new ones, update the ones I have").check()
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text("2 added, 0 updated")).to_be_visible()
    page.goto(f"{BASE}/import")
    expect(page.locator("table.list tbody tr")).to_have_count(2)
    context.close()


# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def flow_photo_activities_notes_and_circles(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "bob")
    page.goto(f"{BASE}/contacts?q=margaret")
    page.get_by_role("link", name="Margaret Hamilton").click()
    page.get_by_text("Add a photo").click()
    page.set_input_files("#photo", files=[{"name": "margaret.png", "mimeType": "image/png", "buffer": PNG}])
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("img", name="Photo of Margaret Hamilton")).to_be_visible()
    natural = page.get_by_role("img", name="Photo of Margaret Hamilton").evaluate("img => img.naturalWidth")
    assert natural == 1, natural

    page.get_by_text("Log an activity").click()
    page.get_by_label("What happened").fill("Walk along the Charles")
    page.get_by_role("button", name="Log activity").click()
    expect(page.locator("#h-activities + details + ul, #h-activities ~ ul").first).to_contain_text("Walk along the Charles")
    page.get_by_role("link", name="Activities", exact=True).click()
    item = page.locator("li", has_text="Walk along the Charles")
    expect(item.get_by_role("link", name="Margaret Hamilton")).to_be_visible()
    check_accessibility(page, "activities")

    page.get_by_role("link", name="Notes", exact=True).click()
    page.get_by_label("Note").fill("Ideas for the reunion in spring")
    page.get_by_role("button", name="Add note").click()
    expect(page.get_by_text("Ideas for the reunion in spring")).to_be_visible()
    check_accessibility(page, "notes")

    # A life event, a gift idea and a topic, then the timeline.
    page.goto(f"{BASE}/contacts?q=margaret")
    page.get_by_role("link", name="Margaret Hamilton").click()
    page.locator("summary", has_text="Add a life event").click()
    page.get_by_label("Which event").fill("moved")
    page.get_by_label("When").fill("2019-06-01")
    page.locator("form[action$='/life-events'] button").click()
    expect(page.locator("#h-life + ul")).to_contain_text("moved")
    page.locator("summary", has_text="Add a gift or gift idea").click()
    page.get_by_label("Gift", exact=True).fill("A slide rule")
    page.locator("form[action$='/gifts'] button").click()
    expect(page.locator("#h-gifts + ul")).to_contain_text("A slide rule")
    page.locator("summary", has_text="Add something to talk about").click()
    page.get_by_label("Topic").fill("Apollo 11 anniversary")
    page.locator("form[action$='/agenda'] button").click()
    agenda = page.locator("#h-agenda + ul li", has_text="Apollo 11 anniversary")
    agenda.get_by_role("button", name="Talked about").click()
    expect(page.locator("li", has_text="Apollo 11 anniversary")).to_have_count(0)
    page.get_by_role("link", name="The whole timeline").click()
    expect(page.locator("ol.timeline")).to_contain_text("Walk along the Charles")
    expect(page.locator("ol.timeline")).to_contain_text("moved")
    check_accessibility(page, "timeline")

    # Circles: give Margaret one, then rename it for everyone.
    page.goto(f"{BASE}/contacts?q=margaret")
    page.get_by_role("link", name="Margaret Hamilton").click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Circles").fill("Apollo")
    page.get_by_role("button", name="Save").click()
    page.goto(f"{BASE}/groups")
    check_accessibility(page, "groups")
    page.locator("li", has_text="Apollo").get_by_text("Rename").first.click()
    page.get_by_label("New name").fill("Apollo program")
    page.locator("li", has_text="Apollo").get_by_role("button", name="Rename").click()
    expect(page.get_by_role("link", name="Apollo program")).to_be_visible()
    page.get_by_role("link", name="Apollo program").click()
    expect(page.locator("#contact-results")).to_contain_text("Margaret Hamilton")

    # A keep-in-touch rhythm for the circle.
    page.goto(f"{BASE}/cadence")
    page.get_by_label("For", exact=True).select_option("circle:Apollo program")
    page.get_by_label("Every (days)").fill("30")
    page.get_by_role("button", name="Add rhythm").click()
    expect(page.locator("#h-policies + ul")).to_contain_text("every 30 days")
    check_accessibility(page, "cadence")
    context.close()


def flow_households_and_files(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "bob")
    page.get_by_role("link", name="Households", exact=True).click()
    expect(page.get_by_role("heading", name="Households", exact=True)).to_be_visible()
    check_accessibility(page, "households")
    page.get_by_label("Name", exact=True).fill("The Hamiltons")
    page.get_by_label("Kind").select_option("family_unit")
    page.get_by_label("Street").fill("1 Apollo Way")
    page.get_by_label("City").fill("Boston")
    page.get_by_role("button", name="Create household").click()
    expect(page.get_by_role("heading", name="The Hamiltons")).to_be_visible()
    expect(page.get_by_text("1 Apollo Way")).to_be_visible()
    household = page.url.split("/households/")[1].split("?")[0]
    # A member found by name; a name nobody has comes back with the field named and kept.
    page.locator("summary", has_text="Add to the household").click()
    page.get_by_label("Who").fill("Einstein")
    page.locator("form[action$='/members'] button[type=submit]").click()
    expect(page.get_by_role("alert")).to_contain_text("who")
    expect(page.get_by_label("Who")).to_have_value("Einstein")
    page.get_by_label("Who").fill("hamilton")
    page.get_by_label("Role").fill("adult")
    page.locator("form[action$='/members'] button[type=submit]").click()
    expect(page.locator("#h-members + ul")).to_contain_text("Margaret Hamilton")
    # Her role and dates are changed in place.
    page.locator("#h-members + ul summary", has_text="Edit role and dates").click()
    member_form = page.locator("#h-members + ul form.stack")
    member_form.get_by_label("Until").fill("1969")
    member_form.get_by_role("button", name="Save").click()
    expect(page.locator("#h-members + ul")).to_contain_text("until 1969")
    check_accessibility(page, "household")
    shot(page, "desktop-household")

    # The contact's page links the household, and keeps files: upload, download, delete.
    page.locator("#h-members + ul").get_by_role("link", name="Margaret Hamilton").click()
    expect(page.locator("#h-households ~ ul").first.get_by_role("link", name="The Hamiltons")).to_be_visible()
    page.locator("summary", has_text="Add a file").click()
    page.set_input_files("#attachment-file", files=[{"name": "apollo-notes.txt", "mimeType": "text/plain",
                                                     "buffer": b"P00DOO: program alarm"}])
    page.get_by_role("button", name="Upload file").click()
    files = page.locator("#h-attachments ~ ul").first
    expect(files.get_by_role("link", name="apollo-notes.txt")).to_be_visible()
    with page.expect_download() as download:
        files.get_by_role("link", name="apollo-notes.txt").click()
    with open(download.value.path(), "rb") as got:
        assert got.read() == b"P00DOO: program alarm"
    check_accessibility(page, "contact-households-files")
    # A life event with a date that is none: the page comes back with the form open and kept.
    page.locator("summary", has_text="Add a life event").click()
    page.get_by_label("Which event").fill("launched")
    page.get_by_label("When").fill("31.02.1969")
    page.locator("form[action$='/life-events'] button").click()
    expect(page.get_by_role("alert")).to_contain_text("date")
    expect(page.get_by_label("When")).to_have_value("31.02.1969")
    expect(page.get_by_label("Which event")).to_have_value("launched")
    files = page.locator("#h-attachments ~ ul").first
    files.locator("li", has_text="apollo-notes.txt").get_by_role("button", name="Delete").click()
    expect(page.get_by_text("Deleted.")).to_be_visible()
    expect(page.get_by_role("link", name="apollo-notes.txt")).to_have_count(0)
    contact_url = page.url.split("?")[0]

    phone = watch(context.new_page())
    phone.set_viewport_size(PHONE)
    for name, path in [("households", "/households"), ("household", f"/households/{household}"),
                       ("contact-files", contact_url.replace(BASE, ""))]:
        phone.goto(f"{BASE}{path}")
        shot(phone, f"phone-{name}")
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{name} is {width}px wide on a {PHONE['width']}px phone"

    page.goto(f"{BASE}/households/{household}")
    page.get_by_role("button", name="Delete household").click()
    expect(page.get_by_text("Deleted.")).to_be_visible()
    expect(page.get_by_text("No households yet.")).to_be_visible()
    shot(page, "desktop-households")
    context.close()


def flow_second_factor_enrolment_and_sign_in(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "bob")
    expect(page.get_by_role("heading", name="Home", exact=True)).to_be_visible()
    page.goto(f"{BASE}/settings")
    page.get_by_role("button", name="Set up two-step verification").click()
    expect(page.get_by_role("img", name="QR code for your authenticator app")).to_be_visible()
    check_accessibility(page, "settings-enrolment")
    shot(page, "desktop-settings-enrolment")
    secret = page.locator("code.secret").inner_text().strip()
    page.get_by_label("Code from your app").fill("000000" if totp(secret) != "000000" else "111111")
    page.get_by_role("button", name="Turn on").click()
    expect(page.get_by_role("alert")).to_contain_text("code")
    page.get_by_label("Code from your app").fill(totp(secret))
    page.get_by_role("button", name="Turn on").click()
    expect(page.get_by_text("Your recovery codes, shown only now.")).to_be_visible()
    codes = page.locator("ul.codes li").all_inner_texts()
    assert len(codes) >= 8, codes
    expect(page.get_by_text("Two-step verification is on")).to_be_visible()
    context.close()

    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "bob")
    expect(page.get_by_role("heading", name="Two-step verification")).to_be_visible()
    check_accessibility(page, "second-factor")
    page.get_by_label("Code").fill("000000" if totp(secret, time.time() + 30) != "000000" else "111111")
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("alert")).to_be_visible()
    # A code of the next step: the one used to turn it on may not be used twice.
    page.get_by_label("Code").fill(totp(secret, time.time() + 30))
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("heading", name="Home", exact=True)).to_be_visible()
    context.close()

    # A recovery code signs in once.
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "bob")
    page.get_by_label("Code").fill(codes[0].strip())
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("heading", name="Home", exact=True)).to_be_visible()
    context.close()


def flow_tokens_and_password(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "ada")
    page.goto(f"{BASE}/settings")
    page.get_by_label("Name", exact=True).fill("Phone sync")
    page.get_by_label("Access").select_option("carddav")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("code.secret").inner_text().strip()
    assert secret.startswith("mycorrhizal_"), secret
    row = page.locator("tr", has_text="Phone sync")
    expect(row).to_contain_text("Contact sync (CardDAV) only")
    row.get_by_role("button", name="Revoke").click()
    expect(page.locator("tr", has_text="Phone sync")).to_contain_text("revoked")
    # The calendar subscription: its address is shown once and serves an iCalendar file.
    page.get_by_role("button", name="Create the address").click()
    feed = page.locator("#feed-url").inner_text().strip()
    assert "/ical/" in feed and feed.endswith(".ics"), feed
    ics = page.request.get(feed)
    assert ics.ok and ics.text().startswith("BEGIN:VCALENDAR"), ics.status
    # A wrong current password is named and nothing changes.
    page.get_by_label("Current password").fill("not my password")
    page.get_by_label("New password", exact=True).fill("an entirely new passphrase here")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("alert")).to_contain_text("current_password")
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill("an entirely new passphrase here")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Password changed.")).to_be_visible()
    # This browser stays signed in; the old password no longer works elsewhere.
    page.goto(f"{BASE}/contacts")
    expect(page.get_by_role("heading", name="Contacts")).to_be_visible()
    other = new_context(browser)
    elsewhere = other.new_page()
    sign_in(elsewhere, "ada")
    expect(elsewhere.get_by_role("alert")).to_contain_text("not right")
    sign_in(elsewhere, "ada", "an entirely new passphrase here")
    expect(elsewhere.get_by_role("heading", name="Home", exact=True)).to_be_visible()
    other.close()
    context.close()


def flow_admin(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "ada", "an entirely new passphrase here")
    page.get_by_role("link", name="Admin").click()
    expect(page.get_by_role("heading", name="Administration")).to_be_visible()
    check_accessibility(page, "admin")
    shot(page, "desktop-admin")
    page.locator("#new-username").fill("carol")
    page.locator("#new-email").fill("carol@example.org")
    page.locator("#new-password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_text("Created.")).to_be_visible()
    carol = page.locator("tr", has_text="carol@example.org")
    carol.get_by_role("button", name="Make administrator").click()
    expect(page.locator("tr", has_text="carol@example.org")).to_contain_text("administrator")
    # bob lost his phone: his two-step verification is cleared.
    page.locator("tr", has_text="bob@example.org").get_by_role("button", name="Reset two-step verification").click()
    expect(page.locator("tr", has_text="bob@example.org")).to_contain_text("off")
    page.locator("tr", has_text="carol@example.org").get_by_role("button", name="Delete").click()
    expect(page.get_by_text("Deleted.")).to_be_visible()
    expect(page.locator("tr", has_text="carol@example.org")).to_have_count(0)
    page.get_by_role("button", name="Rebuild the search index").click()
    expect(page.get_by_text("Search index rebuilt")).to_be_visible()
    context.close()

    # bob signs in with the password alone again, and may not open the admin page.
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "bob")
    expect(page.get_by_role("heading", name="Home", exact=True)).to_be_visible()
    response = page.goto(f"{BASE}/admin")
    assert response.status == 403, response.status
    context.close()


def flow_operations(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "ada", "an entirely new passphrase here")
    page.get_by_role("link", name="Admin").click()
    page.get_by_role("link", name="Operations: status, alerts, events").click()
    expect(page.get_by_role("heading", name="Operations", exact=True)).to_be_visible()
    for heading in ["Alerts", "Subsystems", "Scheduled jobs", "Storage"]:
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
    check_accessibility(page, "operations")
    shot(page, "desktop-operations")
    page.get_by_role("button", name="Evaluate alerts now").click()
    expect(page.get_by_role("heading", name="Operations", exact=True)).to_be_visible()
    page.get_by_role("link", name="Event timeline").first.click()
    expect(page.get_by_role("heading", name="Event timeline")).to_be_visible()
    page.get_by_label("Severity").select_option("info")
    page.get_by_role("button", name="Show").first.click()
    expect(page.get_by_text("events.", exact=False).first).to_be_visible()
    check_accessibility(page, "events")
    page.goto(f"{BASE}/admin/diagnostics")
    expect(page.get_by_role("heading", name="Diagnostics")).to_be_visible()
    expect(page.get_by_role("cell", name="background_jobs", exact=True)).to_be_visible()
    check_accessibility(page, "diagnostics")
    context.close()


def flow_subscriptions(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "ada", "an entirely new passphrase here")
    page.goto(f"{BASE}/settings")
    page.get_by_role("link", name="Subscriptions: address books and calendars from elsewhere").click()
    expect(page.get_by_role("heading", name="Subscriptions", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Address books", exact=True)).to_be_visible()
    check_accessibility(page, "subscriptions")
    # Nothing listens there: the form comes back with the reason, naming the address.
    page.get_by_label("Name").first.fill("Elsewhere")
    page.get_by_label("Address (a server, your account's address or the collection's)").first.fill("http://127.0.0.1:9/")
    page.get_by_role("button", name="Add").first.click()
    expect(page.get_by_role("alert")).to_contain_text("url")
    check_accessibility(page, "subscriptions-refused")
    shot(page, "desktop-subscriptions")
    context.close()


def flow_integrations(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "ada", "an entirely new passphrase here")
    page.goto(f"{BASE}/settings")
    page.get_by_role("link", name="Integrations").click()
    expect(page.get_by_role("heading", name="Integrations", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Immich", exact=True)).to_be_visible()
    check_accessibility(page, "integrations")
    # A private address is refused whatever the configuration: the form says why.
    page.get_by_label("Server address").first.fill("http://192.168.1.20:2283")
    page.get_by_label("API key").fill("a-key")
    page.get_by_role("button", name="Connect").first.click()
    expect(page.get_by_role("alert")).to_contain_text("private or internal")
    check_accessibility(page, "integrations-refused")
    shot(page, "desktop-integrations")
    context.close()


def flow_custom_fields(browser):
    context = new_context(browser)
    page = watch(context.new_page())
    sign_in(page, "ada", "an entirely new passphrase here")
    page.goto(f"{BASE}/settings")
    page.get_by_role("link", name="Custom fields").click()
    check_accessibility(page, "custom-fields")
    page.get_by_label("Label").fill("Favourite drink")
    page.get_by_label("Type").select_option("enum")
    page.get_by_label("Choices (for enum)").fill("tea, coffee")
    page.get_by_role("button", name="Add a field").click()
    expect(page.locator("ul.items")).to_contain_text("Favourite drink")
    create_contact(page, "Katherine", "Johnson")
    page.get_by_text("Edit custom fields").click()
    page.get_by_label("Favourite drink").select_option("tea")
    page.get_by_role("button", name="Save fields").click()
    expect(page.locator("#h-fields + dl")).to_contain_text("tea")
    check_accessibility(page, "contact-with-fields")
    context.close()


def flow_german(browser):
    context = new_context(browser, locale="de-DE")
    page = watch(context.new_page())
    page.goto(f"{BASE}/login")
    expect(page.get_by_role("heading", name="Anmelden")).to_be_visible()
    sign_in(page, "ada", "an entirely new passphrase here")
    page.goto(f"{BASE}/settings")
    page.get_by_label("Language", exact=True).select_option("de")
    page.get_by_label("Date format", exact=True).select_option("eu-mmmm")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Einstellungen gespeichert.")).to_be_visible()
    page.goto(f"{BASE}/contacts?q=hopper")
    page.get_by_role("link", name="Grace Hopper").click()
    expect(page.get_by_text("9. Dezember 1906")).to_be_visible()
    check_accessibility(page, "contact-de")
    context.close()


def main():
    os.makedirs(ARTIFACTS, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        grace = None
        steps = [
            ("first user is admin and manages contacts", lambda: flow_first_user_is_admin_and_manages_contacts(browser)),
            ("second user sees nothing of the first", lambda: flow_second_user_sees_nothing_of_the_first(browser, grace)),
            ("create, edit and search without JavaScript", lambda: flow_without_javascript(browser)),
            ("vCard and CSV import with a duplicate updated", lambda: flow_import(browser)),
            ("photo, activities, notes and circles", lambda: flow_photo_activities_notes_and_circles(browser)),
            ("households and files", lambda: flow_households_and_files(browser)),
            ("two-factor enrolment and sign-in", lambda: flow_second_factor_enrolment_and_sign_in(browser)),
            ("API tokens and password change", lambda: flow_tokens_and_password(browser)),
            ("administration", lambda: flow_admin(browser)),
            ("operations console", lambda: flow_operations(browser)),
            ("subscriptions page", lambda: flow_subscriptions(browser)),
            ("integrations page", lambda: flow_integrations(browser)),
            ("custom fields", lambda: flow_custom_fields(browser)),
            ("German and the date format", lambda: flow_german(browser)),
        ]
        for name, step in steps:
            started = time.time()
            try:
                result = step()
                if grace is None:
                    grace = result
            except Exception as error:  # noqa: BLE001 - report any failure with its flow
                print(f"FAIL {name}: {error}", flush=True)
                browser.close()
                return 1
            print(f"ok   {name} ({time.time() - started:.1f} s)", flush=True)
        browser.close()
    if csp_errors:
        print("FAIL Content-Security-Policy violations:\n" + "\n".join(csp_errors), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
