-- toc:additive
-- 0022: group ids are scoped by namespace. A group of a namespace other
-- than the default is stored under its client's id qualified by the
-- namespace (timer.QualifiedGroupID: "<ns>\x1f<id>"), up to 16 + 1 + 100
-- bytes (timer.MaxStoredGroupIDBytes); both columns that hold a group id
-- widen from 100 to 120 bytes. The ids already stored, of the default
-- namespace, stay as they are.
--
-- Neither statement copies the table's rows or blocks writes. On MariaDB
-- 10.11, toc_jobs refuses ALGORITHM=INSTANT (its index toc_jobs_group,
-- and the virtual group_status of 0021, are on the column) and takes
-- NOCOPY: the index is rebuilt in place, reading the table once.
-- toc_groups, whose primary key is the column, refuses INSTANT and NOCOPY
-- and takes INPLACE: it is rebuilt in place, online. Run again, each
-- changes nothing.
ALTER TABLE toc_jobs
    MODIFY COLUMN group_id VARBINARY(120) NULL,
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_groups
    MODIFY COLUMN group_id VARBINARY(120) NOT NULL,
    ALGORITHM = INPLACE, LOCK = NONE;
