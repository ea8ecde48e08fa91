-- toc:additive
-- 0022: group ids are scoped by namespace (see the MySQL 0022). SQLite
-- does not check a BLOB's length, so its columns hold a qualified id
-- already: nothing to change. The statement below changes nothing; it is
-- here because every migration holds one.
SELECT 1;
