//! One script call, as the connection sends it and the spool keeps it.

use redis::{Script, ToRedisArgs};

/// One script call: the script, its one key (every script works on one key's slot), its arguments.
pub struct Call {
    pub(super) script: &'static Script,
    pub(super) key: String,
    pub(super) args: Vec<Vec<u8>>,
}

impl Call {
    pub fn new(script: &'static Script, key: String) -> Call {
        Call {
            script,
            key,
            args: Vec::new(),
        }
    }

    pub fn arg<T: ToRedisArgs>(mut self, a: T) -> Call {
        a.write_redis_args(&mut self.args);
        self
    }

    pub fn push<T: ToRedisArgs>(&mut self, a: T) {
        a.write_redis_args(&mut self.args);
    }

    pub(super) fn cmd(&self) -> redis::Cmd {
        let mut c = redis::cmd("EVALSHA");
        c.arg(self.script.get_hash()).arg(1).arg(&self.key);
        for a in &self.args {
            c.arg(a.as_slice());
        }
        c
    }
}
