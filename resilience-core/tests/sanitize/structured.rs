//! S2 and S4 in structured text: XML, connection strings, YAML, name/value pairs.

use super::{check, unchanged};

/// S2 in XML: an element named like a secret key (`<password>abc</password>`) leaked its
/// text, as `>` was no separator. Its text, up to the next tag, is hidden now; CDATA too.
/// Only an element opens one: generics (`Vec<Token>`), comparisons and closing tags do not.
#[test]
fn s2_an_xml_element_named_like_a_secret_key_is_redacted() {
    check("<password>abc</password>", "<password>***</password>");
    check("<Password>abc</Password>", "<Password>***</Password>");
    check(
        "<config><db_password>abc def</db_password><user>bob</user></config>",
        "<config><db_password>***</db_password><user>bob</user></config>",
    );
    check(
        "<db:password>abc</db:password>",
        "<db:password>***</db:password>",
    );
    check(
        "body: <auth>\n  <token>\n    abc\n  </token>\n</auth>",
        "body: <auth>\n  <token>\n    ***\n  </token>\n</auth>",
    );
    check(
        "<password><![CDATA[a<b>c]]></password>",
        "<password><![CDATA[***]]></password>",
    );
    // Text starting with `>` (found by the leak proptest: it read as a doubled separator).
    check("<token>>}  a0= </token>", "<token>*** </token>");
    // Unterminated (a cut body): to the end.
    check("response <token>abc def", "response <token>***");
    // Nothing to hide: empty, or a marker.
    unchanged("<password></password> <token>null</token>");
    // Not an element holding a secret.
    unchanged("expected Vec<Token>, found Option<AccessToken>");
    unchanged("if token>limit then; a->token>>2");
    unchanged("</password> and <tokens>5</tokens> and <password_hint>x</password_hint>");
}

/// S2 in XML attributes: an attribute named like a secret key hides its value and nothing
/// else, so the element, the attribute name and the other attributes stay readable. An
/// unquoted value (invalid XML, but logs have it) ends at a blank, `>` or `/>` (it used to
/// swallow the rest of the markup), and a backslash is no escape in XML (`"C:\dir\"` used
/// to run on over the next attribute).
#[test]
fn s2_xml_attribute_password_is_redacted() {
    check(
        r#"<conn password="hunter2" user="bob"/>"#,
        r#"<conn password="***" user="bob"/>"#,
    );
    check("<auth token='abc'>", "<auth token='***'>");
    check("<x api_key=abc>", "<x api_key=***>");
    check("<x api_key=abc/><y>z</y>", "<x api_key=***/><y>z</y>");
    check("<x api_key=abc><y>z</y>", "<x api_key=***><y>z</y>");
    check(
        "<x id=1 api_key=a,b;c) user=bob>",
        "<x id=1 api_key=*** user=bob>",
    );
    check(
        r#"<conn password="C:\dir\" user="bob"/>"#,
        r#"<conn password="***" user="bob"/>"#,
    );
    check(
        "<conn\n  host=\"h\"\n  db:password = 'a\"b'\n  user=\"bob\" />",
        "<conn\n  host=\"h\"\n  db:password = '***'\n  user=\"bob\" />",
    );
    // A backslash-escaped quote that does not close the attribute (the text after it does
    // not go on as a tag) is read as an escape: hidden whole.
    check(
        r#"<x password="a\"b c" y="1">"#,
        r#"<x password="***" y="1">"#,
    );
    // XML escaped inside a `Debug` string keeps its `\"` quotes.
    check(
        r#"body: "<conn password=\"hunter2\" user=\"bob\"/>""#,
        r#"body: "<conn password=\"***\" user=\"bob\"/>""#,
    );
}

/// S2 in XML: an element named like a secret key whose start tag has attributes
/// (`<token expires="3600">abc</token>`) leaked its text, as only `<token>` opened one.
#[test]
fn s2_xml_element_with_attributes_named_like_a_secret_is_redacted() {
    check(
        r#"<token expires="3600">abc</token>"#,
        r#"<token expires="3600">***</token>"#,
    );
    check(
        "<db:Password encrypted='no' note=\"a>b\">hunter2</db:Password>",
        "<db:Password encrypted='no' note=\"a>b\">***</db:Password>",
    );
    check(
        "<password\n  type=\"plain\">\n  abc\n</password>",
        "<password\n  type=\"plain\">\n  ***\n</password>",
    );
    // Its secret-named attributes are hidden too.
    check(
        r#"<token secret="x" kind="y">abc</token>"#,
        r#"<token secret="***" kind="y">***</token>"#,
    );
    // Self-closing: no text to hide.
    unchanged(r#"<token kind="none"/> <password id="1" />"#);
}

/// S2: XML neighbours of the secrets above are not over-redacted.
#[test]
fn s2_xml_attributes_not_named_like_a_secret_are_kept() {
    unchanged(r#"<user name="bob">x</user>"#);
    unchanged(r#"<conn user="bob" host="db" port="5432"/>"#);
    unchanged(r#"<tokens count="5">12</tokens> <password_hint lang="en">pet</password_hint>"#);
    unchanged("invalid token provided; password expired for user bob");
    unchanged("expected Vec<Token >, found Option<AccessToken>");
}

/// S2 in ODBC connection strings: `Pwd=` is a secret key where the text is one (its
/// `;`-separated run also has a Driver, DSN, Server, Uid, Data Source, Database… key). A
/// braced value may hold `;`, and `}}` is an escaped `}` inside it.
#[test]
fn s2_odbc_pwd_in_a_connection_string_is_redacted() {
    check(
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=s3cr3t;",
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=***;",
    );
    check("DSN=x;UID=u;PWD={a;b}", "DSN=x;UID=u;PWD={***}");
    check(
        "connect failed: PWD={a}}b;c}; DSN=x (08001)",
        "connect failed: PWD={***}; DSN=x (08001)",
    );
    check(
        "odbc: Server = h ; Pwd = s3cr3t ; Database = d",
        "odbc: Server = h ; Pwd = *** ; Database = d",
    );
    check(
        r#"conn_str="Data Source=h;Pwd=abc;""#,
        r#"conn_str="Data Source=h;Pwd=***;""#,
    );
    // Unterminated brace (a cut message): to the end.
    check("DSN=x;PWD={a;b", "DSN=x;PWD={***");
}

/// S2: in a connection string a value runs to the next `;`, so a password holding a space
/// is hidden whole, under ODBC's `Pwd=` and ADO.NET's `Password=` alike. Without a `;` after
/// it, to the end of the line (or a closing quote followed by a blank or the end).
#[test]
fn s2_odbc_pwd_with_a_space_is_hidden() {
    check(
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=my pass;Encrypt=yes",
        "Driver={ODBC Driver 18};Server=h;Uid=sa;Pwd=***;Encrypt=yes",
    );
    check(
        "odbc: Server = h ; Pwd = my pass ; Database = d",
        "odbc: Server = h ; Pwd = *** ; Database = d",
    );
    check(
        "Server=tcp:h,1433;User Id=u;Password=my pass;Encrypt=true",
        "Server=tcp:h,1433;User Id=u;Password=***;Encrypt=true",
    );
    check(
        "Data Source=h;Passphrase=correct horse battery;",
        "Data Source=h;Passphrase=***;",
    );
    // Other secret keys hold generated values, without blanks: one word, as elsewhere.
    check(
        "Server=h;Token=abc def;Database=d",
        "Server=h;Token=*** def;Database=d",
    );
    check(
        "Pwd=my pass word;Server=h (08001)",
        "Pwd=***;Server=h (08001)",
    );
    // The last pair: to the end of the line, or the quote closing the string it is in.
    check(
        "DSN=x;UID=u;PWD=my pass\nnext line",
        "DSN=x;UID=u;PWD=***\nnext line",
    );
    check(
        "DSN=x;UID=u;PWD=my pass failed (08001)",
        "DSN=x;UID=u;PWD=***",
    );
    check(
        r#"open "Data Source=h;Password=my pass" failed"#,
        r#"open "Data Source=h;Password=***" failed"#,
    );
    check(
        "conn='Server=h;Pwd=my pass', retrying",
        "conn='Server=h;Pwd=***', retrying",
    );
}

/// S2: outside a connection string a value is still one word (prose keeps its words).
#[test]
fn s2_a_password_outside_a_connection_string_is_one_word() {
    check(
        "password=abc retrying in 3s; server busy",
        "password=*** retrying in 3s; server busy",
    );
    check(
        "host=h password=abc dbname=d",
        "host=h password=*** dbname=d",
    );
    check(
        "cd /tmp; password=abc def; ls",
        "cd /tmp; password=*** def; ls",
    );
}

/// S2: outside a connection string, `PWD=` is a shell's working directory and is kept, as
/// are ODBC's other keys.
#[test]
fn s2_shell_pwd_and_odbc_neighbours_are_kept() {
    unchanged("PWD=/home/x");
    unchanged("env: HOME=/home/x PWD=/home/x SHELL=/bin/bash");
    unchanged("cd /tmp; PWD=/home/x; ls");
    unchanged("PWD=/home/x;OLDPWD=/tmp;HOME=/home/x");
    unchanged("OLDPWD=/tmp;Server=h");
    unchanged("Driver={ODBC Driver 18};Server=h;Uid=sa;Database=d");
}

/// S2 in YAML and in connection strings (libpq DSN, .NET/ADO): the key=value and `key: value`
/// rules already cover these (pinned here; they did not leak).
#[test]
fn s2_yaml_and_connection_string_forms_are_redacted() {
    check(
        "db:\n  password: abc\n  user: x",
        "db:\n  password: ***\n  user: x",
    );
    check("password: 'a b'", "password: '***'");
    check(
        "host=h password=abc dbname=d",
        "host=h password=*** dbname=d",
    );
    check(
        "host=h password='a b' dbname=d",
        "host=h password='***' dbname=d",
    );
    check(
        "Server=x;Database=d;User Id=u;Password=abc;Encrypt=true",
        "Server=x;Database=d;User Id=u;Password=***;Encrypt=true",
    );
    check("Data Source=x;Password=abc;", "Data Source=x;Password=***;");
    check("Password = abc ; Database=d", "Password = *** ; Database=d");
    check("Password=\"a;b\";Database=d", "Password=\"***\";Database=d");
}

/// S2 with the name apart from the value: a `name`/`key` field naming a secret and a sibling
/// `value` field in the same XML tag (.NET appSettings, Spring, HTML inputs). No `key=value`
/// rule saw these: the secret word sits in a value, not a key.
#[test]
fn s2_xml_name_value_pair_password_is_redacted() {
    check(
        r#"<add key="Password" value="hunter2"/>"#,
        r#"<add key="Password" value="***"/>"#,
    );
    check(
        r#"<property name="db.password" value="hunter2"/>"#,
        r#"<property name="db.password" value="***"/>"#,
    );
    // Value first, other attributes kept, single quotes, blanks around `=`.
    check(
        r#"<add value='hunter2' id="7" key = 'ApiKey' />"#,
        r#"<add value='***' id="7" key = 'ApiKey' />"#,
    );
    check(
        r#"<input type="password" name="password" value="hunter2">"#,
        r#"<input type="password" name="password" value="***">"#,
    );
    // Escaped inside a `Debug` string.
    check(
        r#"body: "<add key=\"ClientSecret\" value=\"hunter2\"/>""#,
        r#"body: "<add key=\"ClientSecret\" value=\"***\"/>""#,
    );
    // Several in a row: each tag on its own.
    check(
        r#"<appSettings><add key="Region" value="eu"/><add key="Token" value="abc"/><add key="Timeout" value="30"/></appSettings>"#,
        r#"<appSettings><add key="Region" value="eu"/><add key="Token" value="***"/><add key="Timeout" value="30"/></appSettings>"#,
    );
}

/// S2 with the name apart from the value: an element whose `name`/`key` attribute names a
/// secret holds it as text (`<param name="api_key">abc</param>`, Java properties XML
/// `<entry key="password">…</entry>`).
#[test]
fn s2_xml_named_element_text_is_redacted() {
    check(
        r#"<param name="api_key">abc</param>"#,
        r#"<param name="api_key">***</param>"#,
    );
    check(
        "<entry key=\"db.password\">\n  hunter2\n</entry>",
        "<entry key=\"db.password\">\n  ***\n</entry>",
    );
    // A `value` attribute holds it instead: the text is left alone.
    check(
        r#"<param name="token" value="abc">note</param>"#,
        r#"<param name="token" value="***">note</param>"#,
    );
}

/// S2 with the name apart from the value: JSON/Python/`Debug` objects listing
/// `{name, value}` pairs (Kubernetes env lists, AWS parameter lists, HAR headers).
#[test]
fn s2_json_name_value_pair_password_is_redacted() {
    check(
        r#"{"name":"password","value":"hunter2"}"#,
        r#"{"name":"password","value":"***"}"#,
    );
    check(
        r#"{"Name": "API_KEY", "Value": "abc"}"#,
        r#"{"Name": "API_KEY", "Value": "***"}"#,
    );
    check(
        r#"[{"Name":"DB_PASSWORD","Value":"x1y2"},{"Name":"REGION","Value":"eu-west-1"}]"#,
        r#"[{"Name":"DB_PASSWORD","Value":"***"},{"Name":"REGION","Value":"eu-west-1"}]"#,
    );
    check(
        r#"{"key":"token","value":"x1y2"}"#,
        r#"{"key":"token","value":"***"}"#,
    );
    // Value first, and other fields kept.
    check(
        r#"{"value": "hunter2", "type": "String", "name": "client_secret"}"#,
        r#"{"value": "***", "type": "String", "name": "client_secret"}"#,
    );
    // HAR headers: the header names of S3 are secret names too.
    check(
        r#"{"name": "Authorization", "value": "Bearer abc.def"}"#,
        r#"{"name": "Authorization", "value": "***"}"#,
    );
    // Python repr, Rust `Debug`, JSON inside a string.
    check(
        "{'name': 'password', 'value': 'hunter2'}",
        "{'name': 'password', 'value': '***'}",
    );
    check(
        r#"EnvVar { name: "DB_PASSWORD", value: Some("hunter2") }"#,
        r#"EnvVar { name: "DB_PASSWORD", value: Some("***") }"#,
    );
    check(
        r#"body: "{\"name\":\"password\",\"value\":\"hunter2\"}""#,
        r#"body: "{\"name\":\"password\",\"value\":\"***\"}""#,
    );
    // A nested object under `value` is hidden whole; a nested `value` is not the sibling.
    check(
        r#"{"name":"token","meta":{"value":"v1"},"value":{"a":1}}"#,
        r#"{"name":"token","meta":{"value":"v1"},"value":{***}}"#,
    );
    // A message that ends inside the value.
    check(
        r#"{"name":"password","value":"hunt"#,
        r#"{"name":"password","value":"***"#,
    );
}

/// S2 with the name apart from the value, in YAML block mappings: a Kubernetes env list
/// (`- name: DB_PASSWORD` then `value: …` on the next line), CloudFormation's parameters.
#[test]
fn s2_yaml_name_value_block_is_redacted() {
    check(
        "env:\n- name: DB_PASSWORD\n  value: hunter2\n- name: REGION\n  value: eu-west-1",
        "env:\n- name: DB_PASSWORD\n  value: ***\n- name: REGION\n  value: eu-west-1",
    );
    check(
        "spec:\n  env:\n    - name: API_TOKEN\n      value: \"a b c\"\n    - name: X\n      value: y\n",
        "spec:\n  env:\n    - name: API_TOKEN\n      value: \"***\"\n    - name: X\n      value: y\n",
    );
    // A plain scalar runs to the end of its line, blanks inside included.
    check(
        "- name: db_password\r\n  value: my pass word\r\n",
        "- name: db_password\r\n  value: ***\r\n",
    );
    // A plain scalar ends before a comment (` #`); a `#` inside a word is part of it.
    check(
        "- name: token\n  value: abc def # from vault\n",
        "- name: token\n  value: *** # from vault\n",
    );
    check("- name: token\n  value: a#b", "- name: token\n  value: ***");
    // Other keys, comments and nested blocks between name and value.
    check(
        "- name: CLIENT_SECRET\n  # from vault\n  meta:\n    value: v1\n  value: s3cr3t",
        "- name: CLIENT_SECRET\n  # from vault\n  meta:\n    value: v1\n  value: ***",
    );
    // A block scalar: the lines under it.
    check(
        "- name: private_key\n  value: |\n    line one\n    line two\n- name: x",
        "- name: private_key\n  value: |\n    ***\n- name: x",
    );
    // CloudFormation, YAML form; `key:` as the name field.
    check(
        "Parameters:\n  - ParameterKey: DbPassword\n    ParameterValue: hunter2\n",
        "Parameters:\n  - ParameterKey: DbPassword\n    ParameterValue: ***\n",
    );
    check(
        "- key: api_key\n  value: abc123",
        "- key: api_key\n  value: ***",
    );
}

/// S2: a YAML block value longer than the scan window, in multi-byte text, is hidden to the
/// end of the line the window cuts (not withheld as a span off a char boundary, nor leaked).
#[test]
fn s2_a_long_yaml_block_value_is_hidden_to_its_line_end() {
    let input = format!("- name: token\n  value: |\n    {}", "é".repeat(700));
    check(&input, "- name: token\n  value: |\n    ***");
    let input = format!(
        "- name: token\n  value: |\n{}    {}\n- name: x",
        "    ab\n".repeat(150),
        "é".repeat(100)
    );
    check(&input, "- name: token\n  value: |\n    ***\n- name: x");
}

/// S2: YAML name/value blocks that name no secret, `valueFrom`, and a value in the next item
/// are kept.
#[test]
fn s2_yaml_name_value_blocks_not_naming_a_secret_are_kept() {
    unchanged("- name: REGION\n  value: eu-west-1");
    unchanged("- name: PWD\n  value: /home/x");
    unchanged("- name: password_hint\n  value: pet");
    unchanged(
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password\n",
    );
    unchanged("- name: DB_PASSWORD\n- name: REGION\n  value: eu");
    unchanged("env:\n  - name: TOKEN\n  - value: x\n");
    unchanged("- name: TOKEN\n  items:\n  - value: x\n");
    unchanged("username: password\nvalue: x");
    unchanged("the name: password\nvalue: x");
}

/// S2 with the name apart from the value, the name unquoted: YAML flow mappings
/// (`{name: password, value: x}`) and Go's `%+v` of a struct (`{Name:DB_PASSWORD Value:x}`,
/// as Kubernetes errors print an `EnvVar`).
#[test]
fn s4_unquoted_name_value_pairs_are_redacted() {
    check(
        "{name: password, value: hunter2}",
        "{name: password, value: ***}",
    );
    check(
        "{key: api_key, value: 'x y'}",
        "{key: api_key, value: '***'}",
    );
    check(
        "{Name:DB_PASSWORD Value:hunter2 ValueFrom:nil}",
        "{Name:DB_PASSWORD Value:*** ValueFrom:nil}",
    );
    check(
        "env: [{Name:REGION Value:eu ValueFrom:nil} {Name:API_TOKEN Value:abc123 ValueFrom:nil}]",
        "env: [{Name:REGION Value:eu ValueFrom:nil} {Name:API_TOKEN Value:*** ValueFrom:nil}]",
    );
    // Go's separator is one `:`; the value may start with another.
    check(
        "{Name:API_TOKEN Value::x# ValueFrom:nil}",
        "{Name:API_TOKEN Value:*** ValueFrom:nil}",
    );
}

/// S4: unquoted name fields that name no secret, prose, and Go's empty `Value:` in front of
/// `ValueFrom:` are kept.
#[test]
fn s4_unquoted_names_in_prose_or_naming_no_secret_are_kept() {
    unchanged("{name: region, value: eu-west-1}");
    unchanged("{name: password_hint, value: pet}");
    unchanged("{Name:PWD Value:/home/x ValueFrom:nil}");
    unchanged("{error: name: password must be set, value: missing}");
    unchanged("{msg: invalid value for name: password here}");
    unchanged(
        "{Name:DB_PASSWORD Value: ValueFrom:&EnvVarSource{SecretKeyRef:&SecretKeySelector{Key:password}}}",
    );
}

/// S2 with the name apart from the value: CloudFormation's parameter lists,
/// `{"ParameterKey": …, "ParameterValue": …}`, in either order.
#[test]
fn s2_cloudformation_parameter_pairs_are_redacted() {
    check(
        r#"{"ParameterKey":"DbPassword","ParameterValue":"x1y2"}"#,
        r#"{"ParameterKey":"DbPassword","ParameterValue":"***"}"#,
    );
    check(
        r#"[{"ParameterKey": "Env", "ParameterValue": "prod"}, {"ParameterValue": "hunter2", "ParameterKey": "MasterUserPassword", "UsePreviousValue": false}]"#,
        r#"[{"ParameterKey": "Env", "ParameterValue": "prod"}, {"ParameterValue": "***", "ParameterKey": "MasterUserPassword", "UsePreviousValue": false}]"#,
    );
    check(
        r#"body: "{\"ParameterKey\":\"ApiToken\",\"ParameterValue\":\"abc\"}""#,
        r#"body: "{\"ParameterKey\":\"ApiToken\",\"ParameterValue\":\"***\"}""#,
    );
    unchanged(r#"{"ParameterKey":"DbPasswordLength","ParameterValue":"16"}"#);
    unchanged(r#"{"ParameterKey":"Env","ParameterValue":"password"}"#);
    unchanged(r#"{"OtherKey":"DbPassword","ParameterValue":"x"}"#);
}

/// S2 with the name apart from the value: the AWS CLI's shorthand for CloudFormation
/// parameters, `ParameterKey=DbPassword,ParameterValue=…`, in either order.
#[test]
fn s2_cloudformation_cli_shorthand_is_redacted() {
    check(
        "aws cloudformation deploy --parameters ParameterKey=Env,ParameterValue=prod ParameterKey=DbPassword,ParameterValue=hunter2 failed",
        "aws cloudformation deploy --parameters ParameterKey=Env,ParameterValue=prod ParameterKey=DbPassword,ParameterValue=*** failed",
    );
    check(
        "ParameterValue=s3cr3t,ParameterKey=ApiToken,UsePreviousValue=false",
        "ParameterValue=***,ParameterKey=ApiToken,UsePreviousValue=false",
    );
    check(
        "ParameterKey=MasterUserPassword,ParameterValue='my pass'",
        "ParameterKey=MasterUserPassword,ParameterValue='***'",
    );
    unchanged("ParameterKey=DbPasswordLength,ParameterValue=16");
    unchanged("ParameterKey=Env,ParameterValue=password");
    unchanged("ParameterValue=x");
}

/// S2 with the name apart from the value: an HTML `<meta>` tag holds its value in `content`
/// (`<meta name="csrf-token" content="…">`, Rails and Laravel pages).
#[test]
fn s2_html_meta_csrf_token_is_redacted() {
    check(
        r#"<meta name="csrf-token" content="Zm9vYmFy==">"#,
        r#"<meta name="csrf-token" content="***">"#,
    );
    check(
        r#"<head><meta content='abc' name='csrf-token' /><title>x</title>"#,
        r#"<head><meta content='***' name='csrf-token' /><title>x</title>"#,
    );
    unchanged(r#"<meta name="csrf-param" content="authenticity_token">"#);
    unchanged(r#"<meta name="description" content="token shop">"#);
    unchanged(r#"<div name="csrf-token" content="x">"#);
}

/// S2: ordinary name/value pairs stay readable, a name that is no secret key by itself
/// (`PWD`, a shell variable) stays as it is, and a secret name in one object or tag never
/// hides the value of the next.
#[test]
fn s2_name_value_pairs_not_naming_a_secret_are_kept() {
    unchanged(r#"{"name":"region","value":"eu-west-1"}"#);
    unchanged(r#"<add key="Timeout" value="30"/>"#);
    unchanged(r#"{"name":"PWD","value":"/home/x"}"#);
    unchanged(r#"<add key="PWD" value="/home/x"/>"#);
    unchanged(r#"{"name":"tokens_used","value":5} {"name":"password_hint","value":"pet"}"#);
    unchanged(r#"{"filename":"token","value":"x"} {"key_name":"password","value":"x"}"#);
    unchanged(r#"<param name="password_policy">strict</param>"#);
    // The name in one object, the value in the next.
    unchanged(r#"[{"name":"password"},{"name":"region","value":"eu"}]"#);
    unchanged(r#"[{"name":"region","value":"eu"},{"name":"password"}]"#);
    unchanged(r#"{"a":{"name":"password"},"value":"eu"}"#);
    unchanged(r#"<add key="Password"/><add key="Region" value="eu"/>"#);
    unchanged(r#"<add key="Region" value="eu"/><add key="Password"/>"#);
    unchanged(r#"<add key="Password"/> value="eu""#);
    unchanged(r#"<param name="token"/> text after"#);
    // Prose.
    unchanged("invalid value for name: password must be set");
    unchanged("key password not found; value missing");
}

/// S2, S4: a secret holding a quote then a comma (`ab",x`): when it is quoted, the quote is
/// escaped and the value is hidden whole; unquoted, the `",` run is followed by more value
/// and stays in it. None of it leaks (pinned; these did not leak).
#[test]
fn s2_s4_a_secret_holding_a_quote_then_a_comma_is_hidden_whole() {
    check(r#"{"password":"ab\",x"}"#, r#"{"password":"***"}"#);
    check(
        r#"{"password":"ab\",x", "user": "bob"}"#,
        r#"{"password":"***", "user": "bob"}"#,
    );
    check(
        r#"body: "{\"password\":\"ab\\\",x\"}""#,
        r#"body: "{\"password\":\"***\"}""#,
    );
    check(
        r#"Cfg { password: "ab\",x" }"#,
        r#"Cfg { password: "***" }"#,
    );
    check(r#"{'password': 'ab",x'}"#, r#"{'password': '***'}"#);
    check(r#"password=abc",x rest"#, "password=*** rest");
    check(r#"?password=ab",x&user=bob"#, "?password=***&user=bob");
    // A quoted value ends at its closing quote: what follows is not the secret.
    check(r#"password="abc",x"#, r#"password="***",x"#);
}
