CREATE TABLE IF NOT EXISTS sbtest.perfci_audit_log (id INT NOT NULL, k INT NOT NULL) ENGINE=InnoDB;
CREATE OR REPLACE DEFINER=`root`@`localhost` TRIGGER sbtest.perfci_audit AFTER UPDATE ON sbtest.sbtest1 FOR EACH ROW INSERT INTO sbtest.perfci_audit_log SELECT NEW.id, NEW.k FROM DUAL WHERE NEW.id % 128 = 0;
